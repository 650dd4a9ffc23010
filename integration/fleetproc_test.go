package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The fleet's members: OS processes of the built binary, each running the
// same pipeline file in one consumer group. A member is told its name (the
// Kafka client_id, so that the group's description names it), the address
// of its HTTP server (Prometheus /metrics with the Go and process
// collectors, and Benthos's /debug/pprof endpoints) and whether it seeks
// past the output's progress through the environment.

// fleetMember is one process of the fleet.
type fleetMember struct {
	*eoProc
	// id is the member's name and Kafka client_id: "m<n>", a new n for
	// every process the test starts (a restart is a new member).
	id       string
	httpAddr string
	started  time.Time
	// anchor members are never killed or stopped by the schedule (the soak
	// measures their heap and goroutines over its whole length).
	anchor bool

	mu sync.Mutex
	// peakRSS is the process's VmHWM (bytes), read every sample and right
	// before the test signals it.
	peakRSS int64
	// samples are the member's heap (after a forced GC) and goroutines.
	samples []memberSample
	// scrape is the member's last /metrics answer, and baseline the one at
	// the start of the measured phase (the soak's churn): the visibility
	// figures are their difference.
	scrape, baseline promScrape
	exited           bool
}

// memberSample is one reading of a member's heap and goroutines.
type memberSample struct {
	at         time.Duration // since the member started
	heap       int64         // HeapAlloc right after a forced GC (bytes)
	goroutines int64
}

// fleetEnv is what the members share: the binary, its pipeline file, where
// their logs go.
type fleetEnv struct {
	bin, pipeline, dir string
	n                  int
	mu                 sync.Mutex
	// everyone is every member ever started, in order.
	everyone []*fleetMember
}

// start launches a member. It returns once the member's HTTP server
// answers (a port taken by someone else between the test choosing it and
// the member binding it is retried on another).
func (e *fleetEnv) start(anchor bool) (*fleetMember, error) {
	e.mu.Lock()
	e.n++
	id := fmt.Sprintf("m%d", e.n)
	e.mu.Unlock()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		m, err := e.launch(id, anchor, attempt)
		if err == nil {
			e.mu.Lock()
			e.everyone = append(e.everyone, m)
			e.mu.Unlock()
			return m, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func (e *fleetEnv) launch(id string, anchor bool, attempt int) (*fleetMember, error) {
	l, err := listenLoopback()
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	logPath := filepath.Join(e.dir, fmt.Sprintf("%s-%d.log", id, attempt))
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.bin, "-c", e.pipeline)
	cmd.Env = append(os.Environ(), "FLEET_MEMBER="+id, "FLEET_HTTP="+addr, "FLEET_SEEK="+strconv.FormatBool(seeks(id)))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting member %s: %w", id, err)
	}
	p := &eoProc{name: id, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	m := &fleetMember{eoProc: p, id: id, httpAddr: addr, started: time.Now(), anchor: anchor}
	// The HTTP server comes up before the input connects: a loaded machine
	// takes a few seconds to start the binary.
	exited := false
	up := testkit.Poll(60*time.Second, func() bool {
		select {
		case <-p.done:
			exited = true
			return true
		default:
		}
		resp, err := http.Get("http://" + addr + "/ping")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return true
	})
	switch {
	case exited:
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("member %s exited at start: %s", id, lastLines(string(b), 10))
	case up:
		return m, nil
	}
	p.kill()
	return nil, fmt.Errorf("member %s: its HTTP server did not answer within 60s", id)
}

// listenLoopback takes a free loopback port (closed again by the caller,
// whose member binds it).
func listenLoopback() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// seeks says whether member id starts a partition after the output's
// progress (kafka_txn's start_after_progress): every other member does not,
// so that the replays a kill leaves reach the output's own dedup too.
func seeks(id string) bool {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "m"))
	return n%2 == 1
}

// members returns every member started so far.
func (e *fleetEnv) members() []*fleetMember {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*fleetMember(nil), e.everyone...)
}

// killAll ends every member still running (the test's cleanup).
func (e *fleetEnv) killAll() {
	for _, m := range e.members() {
		m.kill()
	}
}

// alive reports whether the process still runs.
func (m *fleetMember) alive() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// sigkill kills the member at once: nothing flushed, no offset committed,
// the group not left (its session expires on the broker).
func (m *fleetMember) sigkill() {
	m.readPeakRSS()
	m.kill()
	m.mu.Lock()
	m.exited = true
	m.mu.Unlock()
}

// sigterm stops the member gracefully and waits up to within for it to
// exit; it reports whether it did.
func (m *fleetMember) sigterm(within time.Duration) bool {
	m.readPeakRSS()
	// The last figures of a member that leaves.
	m.scrapeMetrics()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(within):
		m.kill()
		return false
	}
	m.mu.Lock()
	m.exited = true
	m.mu.Unlock()
	return m.cmd.ProcessState != nil && m.cmd.ProcessState.Success()
}

// readPeakRSS reads the process's VmHWM (its peak resident set) from
// /proc while it runs.
func (m *fleetMember) readPeakRSS() {
	if !m.alive() {
		return
	}
	v := procStatusBytes(m.cmd.Process.Pid, "VmHWM:")
	m.mu.Lock()
	m.peakRSS = max(m.peakRSS, v)
	m.mu.Unlock()
}

// procStatusBytes reads one "<key> <n> kB" line of /proc/<pid>/status.
func procStatusBytes(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0
			}
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// memberClient is the HTTP client of the test's reads of the members (a
// member that is too starved to answer within it is sampled next time).
var memberClient = &http.Client{Timeout: 10 * time.Second}

func (m *fleetMember) get(path string) ([]byte, error) {
	resp, err := memberClient.Get("http://" + m.httpAddr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s of member %s: %s", path, m.id, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// scrapeMetrics reads the member's /metrics and keeps it as its last
// scrape.
func (m *fleetMember) scrapeMetrics() bool {
	b, err := m.get("/metrics")
	if err != nil {
		return false
	}
	s := parseProm(b)
	m.mu.Lock()
	m.scrape = s
	m.mu.Unlock()
	return true
}

// sample reads the member's heap right after a garbage collection (the
// runtime's HeapAlloc in the text heap profile, which /debug/pprof/heap
// writes after the collection gc=1 asks for: the live heap) and its
// goroutines, its peak RSS and its metrics.
func (m *fleetMember) sample() {
	m.readPeakRSS()
	m.scrapeMetrics()
	b, err := m.get("/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return
	}
	heap := int64(-1)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			heap, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.scrape.value("go_goroutines")
	if heap < 0 || !ok {
		return
	}
	m.samples = append(m.samples, memberSample{at: time.Since(m.started), heap: heap, goroutines: int64(g)})
}

// markBaseline takes the member's current scrape as the start of the
// measured phase.
func (m *fleetMember) markBaseline() {
	m.scrapeMetrics()
	m.mu.Lock()
	m.baseline = m.scrape
	m.mu.Unlock()
}

// figures returns a copy of what the member recorded.
func (m *fleetMember) figures() (peakRSS int64, samples []memberSample, scrape, baseline promScrape) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peakRSS, append([]memberSample(nil), m.samples...), m.scrape, m.baseline
}

// logTail is the last lines of the member's log.
func (m *fleetMember) logTail(n int) string {
	b, err := os.ReadFile(m.log)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
