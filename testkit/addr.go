package testkit

import (
	"net"
	"sync"
	"testing"
)

// handedOut are the addresses FreeAddr returned in this test binary: the
// kernel may hand a port just closed out again, and a test that takes two
// (a dead server's and a live one's) would get one twice.
var handedOut sync.Map

// FreeAddr returns a loopback address nothing listened on a moment ago and
// that FreeAddr never returned before in this test binary.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		if _, taken := handedOut.LoadOrStore(addr, true); !taken {
			return addr
		}
	}
}
