package starrocks

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An FE that answers 307 after it began reading the body (it sent 100
// Continue; an FE slower than the expect-continue timeout does the same)
// leaves net/http writing the first hop's body while the client follows the
// redirect, and http.Client closes that hop's body as soon as it has the 307
// (client.go: req.closeBody() before the next hop): the reader is released
// by the client, not by the transport's writeLoop that reads it. This holds
// only because net/http hands the caller the end of the 307 reply (the
// body's EOF, or the reply itself when it has none) after it decided not to
// reuse the connection, and closes that connection right after: the write
// stops before the load can return. Writing over the buffer once every
// reader is released (what the output's body pool does with the next
// cycle's rows) must change nothing net/http sends; with -race, nothing may
// read it any more.
//
// The redirect goes to a refused address so that the load returns at once,
// while the first hop's write is stalled (the fake FE stops reading). The 307
// carries a body, so net/http's 50 ms wait for the write comes after the
// caller read it. Several rounds: a window would be a timing one.
func TestLoadBodyNotSentAfterReleaseWhenRedirectedMidBody(t *testing.T) {
	const size = 64 << 20
	dead := refusedURL(t)
	for round := range 5 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		overwritten := make(chan struct{})
		seenX := make(chan int, 1)
		go func() {
			defer ln.Close()
			conn, err := ln.Accept()
			if err != nil {
				seenX <- -1
				return
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			req, err := http.ReadRequest(br)
			if err != nil {
				seenX <- -1
				return
			}
			_, _ = io.WriteString(conn, "HTTP/1.1 100 Continue\r\n\r\n")
			_, _ = io.ReadFull(req.Body, make([]byte, 1024))
			_, _ = io.WriteString(conn, "HTTP/1.1 307 Temporary Redirect\r\nLocation: "+dead+req.URL.RequestURI()+"\r\nContent-Length: 2\r\n\r\n{}")
			// Stop reading until the caller has reused the buffer.
			<-overwritten
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			buf := make([]byte, 1<<20)
			x := 0
			for {
				n, err := req.Body.Read(buf)
				x += bytes.Count(buf[:n], []byte{'x'})
				if err != nil {
					break
				}
			}
			seenX <- x
		}()

		c := newClient(t, Config{LoadURLs: []string{"http://" + ln.Addr().String()}})
		body := bytes.Repeat([]byte{'a'}, size)
		refs := newRefCount()
		_, err = c.Load(context.Background(), LoadRequest{
			Txn:     Txn{DB: "shop", Table: "orders", Label: "l1", Multi: true},
			Headers: map[string]string{"format": "json"},
			Body:    body,
			Refs:    refs,
		})
		require.Error(t, err, "the redirect target refuses connections")
		refs.Release()
		refs.waitReleased(t)
		// Every reader was released: the memory is the caller's again. Write
		// over what can not have been handed to the kernel yet (its socket
		// buffers hold a few MB at most).
		for i := 8 << 20; i < 24<<20; i++ {
			body[i] = 'x'
		}
		close(overwritten)
		x := <-seenX
		require.GreaterOrEqual(t, x, 0, "the fake FE failed")
		require.Zerof(t, x, "round %d: net/http sent %d bytes written over the body after every reader of it was released", round, x)
	}
}
