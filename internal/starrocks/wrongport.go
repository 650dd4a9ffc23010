package starrocks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/redact"
)

// Addresses of the wrong kind: an FE serves its HTTP API on http_port (8030
// by default) and the MySQL protocol on query_port (9030 by default), and
// either may be given where the other belongs, or a TLS port where a plain
// one belongs and the reverse. No retry fixes that, and what the peer
// answered tells which mistake it is, so a probe names the fix.

// Ports of an FE with its default configuration, for the messages.
const (
	defaultHTTPPort  = "8030"
	defaultMySQLPort = "9030"
)

// mysqlGreetingHeader reports whether b starts as a MySQL server's first
// packet: a 3-byte little-endian payload length of a plausible greeting and
// sequence number 0. With a fifth byte it must be the protocol version 10
// ('\n'), with which a greeting starts (an error packet, 0xff, is what a
// server that refuses the host sends instead).
func mysqlGreetingHeader(b []byte) bool {
	if len(b) < 4 || b[3] != 0 {
		return false
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if n < 5 || n > 1<<12 {
		return false
	}
	return len(b) == 4 || b[4] == 0x0a || b[4] == 0xff
}

// tlsRecordStart reports whether b starts as a TLS record (an alert or a
// handshake, TLS 1.x): what a TLS port answers to a plain request.
func tlsRecordStart(b []byte) bool {
	return len(b) >= 2 && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03
}

// malformedRE finds the first line net/http quotes when a reply is not
// HTTP. A MySQL greeting's first line is its 4-byte header: the protocol
// version 10 that follows is a '\n'.
var malformedRE = regexp.MustCompile(`malformed HTTP response ("(?:[^"\\]|\\.)*")`)

// msgMySQLPort is the fix of a load URL that is an FE's MySQL port.
func msgMySQLPort(base *url.URL) error {
	return fmt.Errorf("it answers with the MySQL protocol: it is the FE's MySQL port (query_port, %s by default); load_urls take the FE's HTTP port (http_port, %s by default), e.g. http://%s",
		defaultMySQLPort, defaultHTTPPort, net.JoinHostPort(base.Hostname(), defaultHTTPPort))
}

// wrongPortHTTP tells, from the error of a request that got no HTTP reply,
// whether the load URL is an address of the wrong kind: the cause and an
// error that names the fix, or ok false.
func wrongPortHTTP(base *url.URL, err error) (Cause, error, bool) {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && mysqlGreetingHeader(rh.RecordHeader[:]) {
		return CauseWrongPort, msgMySQLPort(base), true
	}
	if errors.Is(err, http.ErrSchemeMismatch) {
		return CauseTLS, fmt.Errorf("it answers plain HTTP, not TLS: write the load URL with http://, or give the FE's HTTPS port: %w", err), true
	}
	m := malformedRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, nil, false
	}
	line, uerr := strconv.Unquote(m[1])
	if uerr != nil {
		return 0, nil, false
	}
	switch {
	case len(line) == 4 && mysqlGreetingHeader([]byte(line)):
		return CauseWrongPort, msgMySQLPort(base), true
	case tlsRecordStart([]byte(line)):
		return CauseTLS, fmt.Errorf("it answers with TLS: write the load URL with https:// (and set the tls block), or give the FE's plain HTTP port (%s by default): %w", defaultHTTPPort, err), true
	}
	return 0, nil, false
}

// httpsPortReply reports a reply to a plain HTTP request that a TLS port
// sent (Go's servers answer one with this 400).
func httpsPortReply(code int, body []byte) bool {
	return code == http.StatusBadRequest && bytes.Contains(body, []byte("HTTP request to an HTTPS server"))
}

// sniffWait bounds each step of sniffMySQLPort.
const sniffWait = 2 * time.Second

// greetsWithMySQL reports whether the server at addr sends a MySQL greeting
// before the client says anything, as a MySQL port does and an HTTP port
// never does. The request of a load URL that is a MySQL port does not always
// fail on the greeting itself: net/http may read it before it wrote the
// request and report the connection broken, with the greeting only in a log
// line, so the probe asks again this way.
func greetsWithMySQL(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: sniffWait}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 5)
	_ = conn.SetReadDeadline(time.Now().Add(sniffWait))
	n, _ := io.ReadAtLeast(conn, buf, 5)
	return n == 5 && mysqlGreetingHeader(buf)
}

// hostPort is the host:port a load URL dials.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// sniffMySQLPort tells what speaks on addr when the MySQL driver could not
// connect without a MySQL error (no greeting came, or not one it could
// read): an error naming what it is and the fix when it is not a MySQL port,
// nil when it is one or when it cannot tell (nothing listens, nothing
// answers). A MySQL server speaks first; an HTTP server (the FE's http_port)
// waits for a request, so one is sent after a moment of silence and its
// reply read.
func sniffMySQLPort(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: sniffWait}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 8)
	_ = conn.SetReadDeadline(time.Now().Add(sniffWait))
	n, rerr := io.ReadAtLeast(conn, buf, 5)
	if n > 0 {
		first := buf[:n]
		switch {
		case mysqlGreetingHeader(first):
			return nil
		case bytes.HasPrefix(first, []byte("HTTP/")):
			return fmt.Errorf("it answers with HTTP: it is not a MySQL port (an FE's MySQL port is query_port, %s by default)", defaultMySQLPort)
		}
		return fmt.Errorf("it does not answer with the MySQL protocol (it sent %q first): it is not a MySQL port (an FE's MySQL port is query_port, %s by default)", first, defaultMySQLPort)
	}
	var ne net.Error
	if ctx.Err() != nil || !errors.As(rerr, &ne) || !ne.Timeout() {
		// Closed without a word: nothing to tell.
		return nil
	}
	// Silence: a server that waits for the client to speak.
	_ = conn.SetDeadline(time.Now().Add(sniffWait))
	host, _, _ := net.SplitHostPort(addr)
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", host); err != nil {
		return nil
	}
	n, _ = io.ReadAtLeast(conn, buf, 5)
	first := buf[:n]
	switch {
	case bytes.HasPrefix(first, []byte("HTTP/")):
		return fmt.Errorf("it answers with HTTP: it is the FE's HTTP port (http_port, %s by default), not its MySQL port (query_port, %s by default), e.g. %s",
			defaultHTTPPort, defaultMySQLPort, redact.URL(net.JoinHostPort(host, defaultMySQLPort)))
	case tlsRecordStart(first):
		return fmt.Errorf("it answers with TLS and waits for the client to speak first: it is not a MySQL port (an FE's MySQL port is query_port, %s by default; its TLS is set with mysql_tls)", defaultMySQLPort)
	}
	return nil
}
