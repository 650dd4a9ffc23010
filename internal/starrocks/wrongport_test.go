package starrocks

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listen serves every connection of a loopback listener with serve.
func listen(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// A load URL of the wrong kind of port is a definite failure whose error
// names the fix: a TLS port given with http://, a plain port given with
// https://, a path an FE does not serve. (The MySQL port given as a load URL
// is tested against the emulator, TestProbeOfTheMySQLPortAsALoadURL.)
func TestProbeNamesTheFixOfAWrongLoadURL(t *testing.T) {
	okState := `{"state":"UNKNOWN","status":"OK","msg":"Success"}`
	tlsPort := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okState) }))
	t.Cleanup(tlsPort.Close)
	// A TLS server that answers a plain request with an alert record
	// (protocol version, unexpected message), as non-Go TLS stacks do.
	alerting := listen(t, func(c net.Conn) {
		buf := make([]byte, 512)
		_, _ = c.Read(buf)
		_, _ = c.Write([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0a})
	})
	root := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, 200, okState)
	})
	plain := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { writeJSON(w, 200, okState) })

	cases := []struct {
		name  string
		url   string
		cause Cause
		want  string
	}{
		{"http to a TLS port (Go's 400)", "http://" + tlsPort.Listener.Addr().String(), CauseTLS, "answers with TLS: write the load URL with https://"},
		{"http to a TLS port (an alert)", "http://" + alerting, CauseTLS, "answers with TLS: write the load URL with https://"},
		{"https to a plain port", "https://" + plain.srv.Listener.Addr().String(), CauseTLS, "answers plain HTTP, not TLS: write the load URL with http://"},
		{"a path", root.srv.URL + "/starrocks", CauseNotFE, `the load URL has the path "/starrocks"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := probeOf(t, Config{LoadURLs: []string{tc.url}}, "shop")
			require.NotNil(t, got)
			assert.Equal(t, tc.cause, got.Cause, "%v", got)
			assert.True(t, got.Cause.Definite())
			assert.Contains(t, got.Error(), tc.want)
		})
	}
}

// The MySQL-side probe tells an address that is not a MySQL port, after the
// driver got no greeting: an HTTP port (the FE's http_port), a TLS port, a
// server that speaks first with something else. A port that stays silent
// (a MySQL server too busy to greet) and one that hangs up may pass: they
// are retried.
func TestMetaProbeNamesAPortThatIsNotMySQL(t *testing.T) {
	httpPort := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { writeJSON(w, 200, `{}`) })
	tlsPort := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(tlsPort.Close)
	ssh := listen(t, func(c net.Conn) {
		_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
		_, _ = io.Copy(io.Discard, c)
	})
	silent := listen(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	hangsUp := listen(t, func(net.Conn) {})

	cases := []struct {
		name, addr string
		cause      Cause
		want       string
	}{
		{"the FE's HTTP port", httpPort.srv.Listener.Addr().String(), CauseWrongPort, "answers with HTTP: it is the FE's HTTP port (http_port, 8030 by default), not its MySQL port (query_port, 9030 by default)"},
		{"a TLS port", tlsPort.Listener.Addr().String(), CauseWrongPort, "answers with HTTP"},
		{"another protocol", ssh, CauseWrongPort, `it sent "SSH-2.0-" first`},
		{"silent", silent, CauseUnreachable, ""},
		{"hangs up", hangsUp, CauseUnreachable, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := OpenMetaWith(MetaConfig{Addr: tc.addr, User: "loader", Password: "s3cret-pw", Timeout: 500 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = m.Close() })
			got := m.Probe(context.Background(), "shop")
			require.NotNil(t, got)
			assert.Equal(t, tc.cause, got.Cause, "%v", got)
			assert.Contains(t, got.Error(), tc.want)
			assert.NotContains(t, got.Error(), "s3cret-pw")
		})
	}
}

// A MySQL greeting's first bytes, and what is not one.
func TestMySQLGreetingHeader(t *testing.T) {
	assert.True(t, mysqlGreetingHeader([]byte("]\x00\x00\x00")), "the emulator's, as net/http quotes it")
	assert.True(t, mysqlGreetingHeader([]byte{0x4a, 0, 0, 0, 0x0a}))
	assert.True(t, mysqlGreetingHeader([]byte{0x17, 0, 0, 0, 0xff}), "an error packet instead of a greeting")
	assert.False(t, mysqlGreetingHeader([]byte("HTTP/1.1 200")))
	assert.False(t, mysqlGreetingHeader([]byte{0x4a, 0, 0, 1, 0x0a}), "not the first packet")
	assert.False(t, mysqlGreetingHeader([]byte{0x4a, 0, 0, 0, 0x16}))
	assert.False(t, mysqlGreetingHeader([]byte{0, 0, 0, 0}))
	assert.True(t, tlsRecordStart([]byte{0x15, 0x03, 0x03}))
	assert.False(t, tlsRecordStart([]byte("HTTP")))
	_ = tls.VersionTLS12
}
