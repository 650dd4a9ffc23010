package starrocks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MySQL capability flags a greeting announces.
const (
	capLongPassword = 1 << 0
	capProtocol41   = 1 << 9
	capSSL          = 1 << 11
	capSecureConn   = 1 << 15
	capPluginAuth   = 1 << 19
)

// fakeMySQL is the start of a MySQL server: it sends a protocol-10 greeting
// (announcing TLS when tlsConf is set) and, when the client asks for TLS,
// runs the TLS handshake and reports its outcome; then it hangs up. With
// hangUp it closes every connection before the greeting.
type fakeMySQL struct {
	ln         net.Listener
	handshakes chan error
}

func startFakeMySQL(t *testing.T, tlsConf *tls.Config, hangUp bool) *fakeMySQL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeMySQL{ln: ln, handshakes: make(chan error, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if hangUp {
					return
				}
				f.serve(c, tlsConf)
			}()
		}
	}()
	return f
}

func (f *fakeMySQL) serve(c net.Conn, tlsConf *tls.Config) {
	caps := uint32(capLongPassword | capProtocol41 | capSecureConn | capPluginAuth)
	if tlsConf != nil {
		caps |= capSSL
	}
	p := []byte{10}
	p = append(p, "8.0.0-fake\x00"...)
	p = binary.LittleEndian.AppendUint32(p, 7)
	p = append(p, "abcdefgh"...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint16(p, uint16(caps))
	p = append(p, 33)
	p = binary.LittleEndian.AppendUint16(p, 2)
	p = binary.LittleEndian.AppendUint16(p, uint16(caps>>16))
	p = append(p, 21)
	p = append(p, make([]byte, 10)...)
	p = append(p, "ijklmnopqrst\x00"...)
	p = append(p, "mysql_native_password\x00"...)
	hdr := []byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 0}
	if _, err := c.Write(append(hdr, p...)); err != nil || tlsConf == nil {
		return
	}
	// The client's SSL request: a header and 32 bytes.
	req := make([]byte, 4+32)
	if _, err := io.ReadFull(c, req); err != nil {
		f.handshakes <- err
		return
	}
	srv := tls.Server(c, tlsConf)
	f.handshakes <- srv.Handshake()
}

// selfSigned is a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fe"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// The TLS settings reach the driver: against a server that offers TLS the
// client runs the handshake with them (and it succeeds when they trust the
// server); with a CA that does not, or against a server without TLS, the
// probe fails with a TLS cause, not "unreachable".
func TestMetaTLS(t *testing.T) {
	cert, trusted := selfSigned(t)
	serverTLS := &tls.Config{Certificates: []tls.Certificate{cert}}
	ctx := context.Background()

	t.Run("trusted", func(t *testing.T) {
		srv := startFakeMySQL(t, serverTLS, false)
		m, err := OpenMetaWith(MetaConfig{Addr: srv.ln.Addr().String(), User: "u", Password: "p", TLS: &tls.Config{RootCAs: trusted}})
		require.NoError(t, err)
		defer m.Close()
		_ = m.Probe(ctx, "") // the fake hangs up after the handshake
		select {
		case err := <-srv.handshakes:
			require.NoError(t, err, "the client completed a TLS handshake with the configured CA")
		case <-time.After(5 * time.Second):
			t.Fatal("the client never asked for TLS")
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		srv := startFakeMySQL(t, serverTLS, false)
		m, err := OpenMetaWith(MetaConfig{Addr: srv.ln.Addr().String(), User: "u", Password: "p", TLS: &tls.Config{RootCAs: x509.NewCertPool()}})
		require.NoError(t, err)
		defer m.Close()
		got := m.Probe(ctx, "")
		require.NotNil(t, got)
		assert.Equal(t, CauseTLS, got.Cause, "%v", got)
		assert.Contains(t, got.Error(), "certificate")
	})
	t.Run("server without TLS", func(t *testing.T) {
		srv := startFakeMySQL(t, nil, false)
		m, err := OpenMetaWith(MetaConfig{Addr: srv.ln.Addr().String(), User: "u", Password: "p", TLS: &tls.Config{RootCAs: trusted}})
		require.NoError(t, err)
		defer m.Close()
		got := m.Probe(ctx, "")
		require.NotNil(t, got)
		assert.Equal(t, CauseTLS, got.Cause, "%v", got)
		assert.ErrorIs(t, got, mysql.ErrNoTLS)
	})
}

// recordingLogger is a go-sql-driver/mysql Logger that records its lines.
type recordingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (r *recordingLogger) Print(v ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprint(v...))
}

// The driver's own messages go to each client's Log, never to the
// driver's process-wide logger: two clients in one process each get only
// theirs.
func TestMetaDriverMessagesGoToTheirClient(t *testing.T) {
	global := &recordingLogger{}
	require.NoError(t, mysql.SetLogger(global))
	t.Cleanup(func() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) })

	type line struct {
		msg      string
		harmless bool
	}
	var mu sync.Mutex
	got := map[string][]line{}
	open := func(name string) *Meta {
		srv := startFakeMySQL(t, nil, true)
		m, err := OpenMetaWith(MetaConfig{Addr: srv.ln.Addr().String(), User: "u", Password: "p",
			Log: func(msg string, harmless bool) {
				mu.Lock()
				defer mu.Unlock()
				got[name] = append(got[name], line{msg, harmless})
			}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	a, b := open("a"), open("b")
	require.NotNil(t, a.Probe(context.Background(), ""), "the server hangs up")
	require.NotNil(t, b.Probe(context.Background(), ""))
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, got["a"], "the driver logs the connection it lost")
	require.NotEmpty(t, got["b"])
	assert.Len(t, got, 2, "each client got its own lines")
	assert.False(t, got["a"][0].harmless)
	global.mu.Lock()
	defer global.mu.Unlock()
	assert.Empty(t, global.lines, "nothing reached the driver's process-wide logger")

	var harmless bool
	driverLogger{log: func(_ string, h bool) { harmless = h }}.Print("closing bad idle connection: ", io.EOF)
	assert.True(t, harmless, "a discarded idle connection hurts nothing")
}

// The driver's lines start with its source position: a discarded idle
// connection is still told harmless, and the plugin named in an "unknown
// auth plugin" line is kept for the probe's error.
func TestDriverLoggerReadsTheDriversLines(t *testing.T) {
	var harmless bool
	plugin := &atomic.Pointer[string]{}
	d := driverLogger{log: func(_ string, h bool) { harmless = h }, plugin: plugin}
	d.Print("connection.go:803 ", "closing bad idle connection: ", io.EOF)
	assert.True(t, harmless, "a discarded idle connection hurts nothing")
	d.Print("auth.go:341 ", "unknown auth plugin:", "dialog")
	require.NotNil(t, plugin.Load())
	assert.Equal(t, "dialog", *plugin.Load())
	assert.False(t, harmless)
}
