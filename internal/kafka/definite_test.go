package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// selfSigned returns a server certificate for 127.0.0.1 signed by nobody a
// client trusts.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Failures no retry fixes are told apart from those a retry may fix, and
// each names what to check.
func TestDefiniteClusterErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plain, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "present"))
	require.NoError(t, err)
	t.Cleanup(plain.Close)
	sasl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "s3cret"))
	require.NoError(t, err)
	t.Cleanup(sasl.Close)
	tlsCluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}))
	require.NoError(t, err)
	t.Cleanup(tlsCluster.Close)
	// Servers that are no Kafka broker, answering the first bytes they
	// read: an HTTP server that refuses a malformed request at once (as
	// most do), and a TLS listener of a broker on the JVM, whose TLS engine
	// answers plaintext with a fatal alert.
	web := answering(t, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", false)
	jvmTLS := answering(t, "\x15\x03\x03\x00\x02\x02\x0a", false)
	// A MySQL server speaks first: its greeting.
	mysql := answering(t, "\x4a\x00\x00\x00\x0a8.0.0-starrocks\x00", true)

	untrusted := &tls.Config{MinVersion: tls.VersionTLS12}
	for name, c := range map[string]struct {
		conf     ClientConfig
		definite bool
		want     string
	}{
		"a refused password": {ClientConfig{SeedBrokers: sasl.ListenAddrs(), SASL: []SASL{{Mechanism: SASLPlain, Username: "admin", Password: "wrong"}}},
			true, "closed the connection during the sasl handshake: authentication with sasl mechanism PLAIN as user \"admin\" was probably refused, check the sasl username and password"},
		"plaintext to a TLS listener that sends an alert": {ClientConfig{SeedBrokers: []string{jvmTLS}},
			true, "answered with a TLS alert: the listener wants TLS; set tls.enabled: true"},
		"an untrusted certificate": {ClientConfig{SeedBrokers: tlsCluster.ListenAddrs(), TLSEnabled: true, TLS: untrusted},
			true, "is not trusted: set tls.root_cas or tls.root_cas_file to the CA that signed it"},
		"an HTTP server": {ClientConfig{SeedBrokers: []string{web}},
			true, "answered as an HTTP server, not a Kafka broker: check the port"},
		"TLS to a server that answers otherwise": {ClientConfig{SeedBrokers: []string{web}, TLSEnabled: true, TLS: untrusted},
			true, "do not speak TLS on that port, and tls is enabled: give the brokers' TLS listener, or set tls.enabled: false for a plaintext one"},
		"a MySQL server": {ClientConfig{SeedBrokers: []string{mysql}},
			true, "did not answer as a Kafka broker (its first reply is no Kafka response): check the addresses and ports"},
		"a TLS listener that closes on plaintext": {ClientConfig{SeedBrokers: tlsCluster.ListenAddrs()},
			false, "is TLS missing?"},
		"nothing listening": {ClientConfig{SeedBrokers: []string{"127.0.0.1:1"}},
			false, "are unreachable or refused the connection"},
	} {
		t.Run(name, func(t *testing.T) {
			c.conf.ClientID = "t"
			err := c.conf.CheckCluster(ctx, nil, "topics", "topics [present]")
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, c.definite, IsDefinite(err), "%v", err)
			assert.NotContains(t, err.Error(), "wrong", "no password in the text")
		})
	}
	t.Run("a login refused once, then accepted, is a broker that restarted", func(t *testing.T) {
		flaky := flakySASL(t, sasl.ListenAddrs()[0])
		err := ClientConfig{SeedBrokers: []string{flaky}, ClientID: "t", SASL: []SASL{{Mechanism: SASLPlain, Username: "admin", Password: "s3cret"}}}.
			CheckCluster(ctx, nil, "topics", "")
		require.NoError(t, err)
	})
	t.Run("a missing topic is retried: it may be created", func(t *testing.T) {
		err := ClientConfig{SeedBrokers: plain.ListenAddrs(), ClientID: "t"}.CheckCluster(ctx, nil, "topics", "", "absent")
		require.Error(t, err)
		assert.False(t, IsDefinite(err))
	})
}

// answering starts a TCP server that writes reply to every connection, at
// once (first) or after the first bytes it reads, and returns its address.
func answering(t *testing.T, reply string, first bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if !first {
					buf := make([]byte, 512)
					if _, err := conn.Read(buf); err != nil {
						return
					}
				}
				_, _ = conn.Write([]byte(reply))
				_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, _ = io.Copy(io.Discard, conn)
			}()
		}
	}()
	return l.Addr().String()
}

// flakySASL is a proxy to broker that closes its first connection as soon
// as the client has written its first request (a broker going down) and
// forwards every later one.
func flakySASL(t *testing.T, broker string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			if n.Add(1) == 1 {
				go func() {
					buf := make([]byte, 512)
					_, _ = conn.Read(buf)
					conn.Close()
				}()
				continue
			}
			go func() {
				defer conn.Close()
				up, err := net.Dial("tcp", broker)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, conn) }()
				_, _ = io.Copy(conn, up)
			}()
		}
	}()
	return l.Addr().String()
}
