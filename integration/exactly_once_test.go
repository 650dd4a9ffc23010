package integration

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// Process-level exactly-once tests: the real binary, killed with
// SIGKILL at random moments, against the emulator in its own process and
// kfake over loopback. STARROCKS_TXN_KILL_LOOP=1 runs the long kill loop;
// STARROCKS_TXN_KEEP_LOGS=<dir> keeps the pipeline and emulator logs of a
// run whose tables differ from the model there, and lists the events found
// more than once.

var eoKillLoop = os.Getenv("STARROCKS_TXN_KILL_LOOP") == "1"

// eoBuildBinary builds the project's binary once per test.
func eoBuildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "benthos-starrocks")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the binary: %s", out)
	return bin
}

func eoFreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// eoWorld is one test's processes and clients.
type eoWorld struct {
	t        *testing.T
	bin      string
	dir      string
	httpAddr string
	sqlAddr  string
	db       *sql.DB
	kafka    *kafka.Cluster
	model    *workload.Model
	prod     *workload.Producer

	runs atomic.Int64
	// Reader figures.
	checks, torn, dupSeen atomic.Int64
	readErr               atomic.Value
	// mode is the pipelines' transaction_mode ("": the default); heal,
	// set in per-table mode, takes the reader's partial reads, which pass
	// while they heal (pertable_kill_test.go).
	mode string
	heal *testkit.Heal
}

func eoStart(t *testing.T, partitions int32) *eoWorld { return eoStartAs(t, partitions, "") }

// eoStartAs is eoStart with the emulator process answering as StarRocks
// version ("": its default).
func eoStartAs(t *testing.T, partitions int32, version string) *eoWorld {
	t.Helper()
	w := &eoWorld{t: t, bin: eoBuildBinary(t), dir: t.TempDir(), model: workload.NewModel()}
	w.httpAddr, w.sqlAddr = eoFreeAddr(t), eoFreeAddr(t)

	// The emulator in its own process.
	emLog, err := os.Create(filepath.Join(w.dir, "emulator.log"))
	require.NoError(t, err)
	args := []string{"emulator", "--http", w.httpAddr, "--mysql", w.sqlAddr, "--schema", "../examples/schema.sql"}
	if version != "" {
		args = append(args, "--starrocks-version", version)
	}
	em := exec.Command(w.bin, args...)
	em.Stdout, em.Stderr = emLog, emLog
	require.NoError(t, em.Start())
	t.Cleanup(func() {
		_ = em.Process.Signal(syscall.SIGTERM)
		_ = em.Wait()
		_ = emLog.Close()
	})

	w.db = emurig.Open(t, w.sqlAddr)
	testkit.WaitFor(t, 20*time.Second, func() bool { return w.db.Ping() == nil }, "the emulator process answers on its MySQL port")

	// Kafka in the test process, reached by the binary over loopback.
	w.kafka = kafka.New(t, kafka.Topic("cdc", partitions, nil))

	seed := testSeed(t)
	gen := workload.NewGenerator(workload.Options{Partitions: partitions, Seed: seed, Events: true, UpdateRatio: 0.35, DeleteRatio: 0.1})
	w.prod, err = workload.NewProducer(workload.ProducerOptions{
		Brokers: w.kafka.Brokers(), Topic: "cdc", TxnsPerKafkaTxn: 2, AbortRatio: 0.2, Rate: 120,
		TransactionalID: fmt.Sprintf("eo-%d", seed),
	}, gen, w.model)
	require.NoError(t, err)
	t.Cleanup(w.prod.Close)
	return w
}

// eoPipeline is the pipeline every process runs: exactly_once, offsets
// committed to Kafka only every 3 s while StarRocks commits every 200 ms (so
// nearly every kill leaves committed cycles to re-read), short sessions so a
// killed member's partitions move quickly.
func (w *eoWorld) pipelineFile(semantic string, seek bool) string {
	yaml := fmt.Sprintf(`
http: { enabled: false }
logger: { level: info, format: logfmt }
shutdown_timeout: 5s
input:
  kafka_txn:
    seed_brokers: [ %q ]
    topics: [ cdc ]
    consumer_group: eo-loaders
    commit_period: 3s
    session_timeout: 1s
    heartbeat_interval: 250ms
    rebalance_timeout: 4s
    revoke_timeout: 2s
    batching: { count: 4, period: 20ms }
    start_after_progress: %v
  processors:
    - txn_assembler: { format: envelope }
output:
  starrocks_txn:
    load_urls: [ "http://%s" ]
    mysql_address: %q
    semantic: %s
    pipeline_id: eo-test
    commit_interval: 200ms
    txn_timeout: 20s
    max_in_flight: 256
    label_state_wait: 500ms
    request_timeout: 3s
    retry_backoff: { initial_interval: 50ms, max_interval: 500ms }
`, w.kafka.Brokers()[0], seek, w.httpAddr, w.sqlAddr, semantic)
	if w.mode != "" {
		yaml += "    transaction_mode: " + w.mode + "\n"
	}
	path := filepath.Join(w.dir, fmt.Sprintf("pipeline-%s-seek-%v.yaml", semantic, seek))
	require.NoError(w.t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

// eoProc is one running pipeline process.
type eoProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (w *eoWorld) startProc(name, pipeline string) *eoProc {
	n := w.runs.Add(1)
	logPath := filepath.Join(w.dir, fmt.Sprintf("%s-%d.log", name, n))
	f, err := os.Create(logPath)
	require.NoError(w.t, err)
	cmd := exec.Command(w.bin, "-c", pipeline)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(w.t, cmd.Start())
	p := &eoProc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	w.t.Cleanup(func() { p.kill() })
	return p
}

// waitLogged waits until the process's log has a line containing s.
func (p *eoProc) waitLogged(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	testkit.WaitFor(t, timeout, func() bool { return p.logged(s) > 0 }, "%s logged %q", p.name, s)
}

// logged counts the lines of the process's log that contain s.
func (p *eoProc) logged(s string) int {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}

// kill stops the whole process at once: nothing is flushed, no offset is
// committed, the group is not left.
func (p *eoProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop is a graceful stop (SIGTERM).
func (p *eoProc) stop(t *testing.T) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Errorf("%s did not stop within 15s of SIGTERM", p.name)
		p.kill()
	}
}

// reader runs the consistency query in a loop for the whole test: no reader
// may ever see part of a source transaction, nor (exactly_once) an event
// twice.
func (w *eoWorld) reader(ctx context.Context) func() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			// A round every 10 ms (20 ms after an error), stopped at once.
			pause := 10 * time.Millisecond
			if w.heal != nil {
				if err := healRound(ctx, w.db, w.heal); err != nil {
					if ctx.Err() == nil {
						w.readErr.Store(err.Error())
					}
					pause = 20 * time.Millisecond
				} else {
					w.checks.Add(1)
				}
			} else if torn, orphans, err := workload.CheckConsistency(ctx, w.db); err != nil {
				if ctx.Err() == nil {
					w.readErr.Store(err.Error())
				}
				pause = 20 * time.Millisecond
			} else {
				w.checks.Add(1)
				w.torn.Add(torn + orphans)
				var dups int64
				if err := w.db.QueryRowContext(ctx, "SELECT COUNT(*) - COUNT(DISTINCT event_id) FROM test.order_events").Scan(&dups); err == nil {
					w.dupSeen.Add(dups)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}()
	return wg.Wait
}

// converged waits until the tables equal the model: orders and items
// exactly, order_events (DUPLICATE KEY) each committed event exactly once.
// It returns how they differ at the end ("" once they converged).
func (w *eoWorld) converged(timeout time.Duration) string {
	var mismatch string
	testkit.Poll(timeout, func() bool {
		got, err := workload.ReadTarget(context.Background(), w.db, true)
		if err != nil {
			mismatch = "reading the target: " + err.Error()
			return false
		}
		mismatch = workload.Detail(workload.Compare(w.model.Snapshot(), got))
		return mismatch == ""
	})
	return mismatch
}

// grepLogs counts lines containing s over every pipeline log.
func (w *eoWorld) grepLogs(s string) int {
	files, _ := filepath.Glob(filepath.Join(w.dir, "*.log"))
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "emulator.log") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), s) {
				n++
			}
		}
		_ = fh.Close()
	}
	return n
}

// grepLogsRe counts the lines of the pipelines' logs that match the
// regular expression re.
func (w *eoWorld) grepLogsRe(re string) int {
	rx := regexp.MustCompile(re)
	files, _ := filepath.Glob(filepath.Join(w.dir, "*.log"))
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "emulator.log") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n += len(rx.FindAllIndex(b, -1))
	}
	return n
}

// tailLogs prints the last warning and error lines of every pipeline log.
func (w *eoWorld) tailLogs() {
	files, _ := filepath.Glob(filepath.Join(w.dir, "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "level=warn") || strings.Contains(l, "level=error") || strings.Contains(l, "panic") {
				keep = append(keep, l)
			}
		}
		if len(keep) > 8 {
			keep = keep[len(keep)-8:]
		}
		w.t.Logf("%s:\n%s", filepath.Base(f), strings.Join(keep, "\n"))
	}
}

// finish stops producing, lets the survivors catch up, and checks the
// tables, the reader and that replays really happened and were dropped.
func (w *eoWorld) finish(stopProducer func(), stopReader func(), survivors []*eoProc, kills int, wantDrops bool) {
	t := w.t
	stopProducer()
	mismatch := w.converged(45 * time.Second)
	for _, p := range survivors {
		p.stop(t)
	}
	stopReader()
	ok := mismatch == ""
	if !ok {
		w.tailLogs()
		if keep := os.Getenv("STARROCKS_TXN_KEEP_LOGS"); keep != "" {
			rows, err := w.db.Query("SELECT event_id, COUNT(*) FROM test.order_events GROUP BY event_id HAVING COUNT(*) > 1")
			if err == nil {
				for rows.Next() {
					var id, n int64
					_ = rows.Scan(&id, &n)
					t.Logf("event %d is in order_events %d times", id, n)
				}
				rows.Close()
			}
			dst := filepath.Join(keep, fmt.Sprintf("eo-%d", time.Now().UnixNano()))
			_ = exec.Command("cp", "-r", w.dir, dst).Run()
			t.Logf("logs kept in %s", dst)
		}
	}
	require.True(t, ok, "the tables equal the model, every event exactly once: %s", mismatch)
	assert.Zero(t, w.torn.Load(), "a reader saw part of a source transaction")
	if w.heal != nil {
		assert.NoError(t, w.heal.Check(true), "partial reads (per-table mode): %s", w.heal)
		t.Logf("per-table: %s", w.heal)
	}
	assert.Zero(t, w.dupSeen.Load(), "a reader saw an event twice")
	assert.Positive(t, w.checks.Load(), "the reader ran (last error: %v)", w.readErr.Load())
	// A kill between a StarRocks commit and the next Kafka offset commit
	// leaves committed source transactions behind the group offset. The
	// input seeks past them through the registry (the optimisation), and
	// the output drops whatever still reaches it.
	seeks := w.grepLogs("after the output's committed progress")
	drops := w.grepLogs("dropping replays StarRocks already holds")
	t.Logf("%d kills, %d pipeline runs; producer committed %d and aborted %d source transactions; %d events; reader rounds %d; partitions started after the progress: %d, partition states that dropped replays: %d",
		kills, w.runs.Load(), w.prod.Stats.Committed.Load(), w.prod.Stats.Aborted.Load(), len(w.model.Snapshot().Events), w.checks.Load(), seeks, drops)
	assert.Positive(t, seeks+drops, "the kills left committed source transactions behind the group offset, and they were skipped")
	if wantDrops {
		assert.Positive(t, drops, "with start_after_progress off the output itself dropped replays")
	}
}

// traffic starts the reader and the producer and returns their stops, the
// number of kills (3, or long under STARROCKS_TXN_KILL_LOOP=1) and the test's
// random source.
func (w *eoWorld) traffic(longKills int, stream uint64) (stopProducer, stopReader func(), kills int, rng *rand.Rand) {
	rctx, rcancel := context.WithCancel(context.Background())
	waitReader := w.reader(rctx)
	stopReader = func() { rcancel(); waitReader() }
	stopProducer = w.produce()
	kills = 3
	if eoKillLoop {
		kills = longKills
	}
	return stopProducer, stopReader, kills, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), stream))
}

func (w *eoWorld) produce() func() {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.prod.Produce(ctx, 0) }()
	return func() {
		cancel()
		require.NoError(w.t, <-errc)
	}
}

// TestExactlyOnceSurvivesSIGKILL kills the only pipeline process at random
// moments while traffic flows, restarting it each time. Restarts alternate
// between the input seeking after the progress and not (so the output's
// own dedup is what keeps replays out).
func TestExactlyOnceSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	w := eoStart(t, 4)
	// Runs 1, 3, 5, … start without the seek: each follows a kill, so the
	// output's own dedup meets replays in every one of them.
	pipelines := []string{w.pipelineFile("exactly_once", true), w.pipelineFile("exactly_once", false)}
	stopProducer, stopReader, kills, rng := w.traffic(40, 3)
	p := w.startProc("solo", pipelines[0])
	for i := 0; i < kills; i++ {
		// At least a second: the run has committed something to re-read;
		// the kill comes at a random moment (real time).
		randomMoment(rng, time.Second, 3*time.Second)
		p.kill()
		p = w.startProc("solo", pipelines[(i+1)%2])
	}
	// The last run loads while traffic flows.
	p.waitLogged(t, "Assigned partitions", 60*time.Second)
	w.finish(stopProducer, stopReader, []*eoProc{p}, kills, true)
}

// TestExactlyOnceSurvivesSIGKILLAcrossRebalance runs two processes in one
// consumer group and kills one of them at random moments; the survivor takes
// its partitions over (after the session timeout) and the killed one comes
// back and takes some again.
func TestExactlyOnceSurvivesSIGKILLAcrossRebalance(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	w := eoStart(t, 4)
	pipeline := w.pipelineFile("exactly_once", true)
	stopProducer, stopReader, kills, rng := w.traffic(30, 5)
	procs := []*eoProc{w.startProc("a", pipeline), w.startProc("b", pipeline)}
	for _, p := range procs {
		p.waitLogged(t, "Assigned partitions", 60*time.Second)
	}
	// On a loaded machine a victim can die before its output committed
	// anything the group offset lags: then the kills leave nothing to skip
	// and finish's check that replays were skipped cannot hold. Kill more
	// (at most 7 more times) until one did.
	replayed := func() bool {
		return w.grepLogs("after the output's committed progress")+w.grepLogs("dropping replays StarRocks already holds") > 0
	}
	done := 0
	for i := 0; i < kills || (!replayed() && i < kills+7); i++ {
		done++
		victim := rng.IntN(2)
		// A victim that never got partitions (a restarted process still
		// joining on a loaded machine) leaves nothing behind to skip.
		procs[victim].waitLogged(t, "Assigned partitions", 60*time.Second)
		survivor := procs[1-victim]
		assigned := survivor.logged("Assigned partitions")
		procs[victim].kill()
		// The survivor owns everything once the victim's session expires.
		testkit.WaitFor(t, 60*time.Second, func() bool { return survivor.logged("Assigned partitions") > assigned },
			"%s takes the partitions of the killed %s", survivor.name, procs[victim].name)
		procs[victim] = w.startProc(procs[victim].name, pipeline)
		// The next kill comes at a random moment (real time).
		randomMoment(rng, 500*time.Millisecond, 2500*time.Millisecond)
	}
	// Both members load while traffic flows.
	for _, p := range procs {
		p.waitLogged(t, "Assigned partitions", 60*time.Second)
	}
	w.finish(stopProducer, stopReader, procs, done, false)
}

// TestExactlyOnceKillCheckCatchesAtLeastOnce runs the kill loop with
// semantic at_least_once: the same checks must then find events that were
// loaded twice, or the kill test could not fail.
func TestExactlyOnceKillCheckCatchesAtLeastOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	w := eoStart(t, 4)
	pipeline := w.pipelineFile("at_least_once", false)
	stopProducer := w.produce()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	p := w.startProc("alo", pipeline)
	dups := 0
	// A kill makes duplicates only when it falls between a StarRocks commit
	// and the offset commit after it; on a loaded machine a restarted
	// process may not have committed anything yet. Kill until one did (at
	// most 15 times), each run once it has its partitions.
	for i := 0; i < 15 && dups == 0; i++ {
		p.waitLogged(t, "Assigned partitions", 60*time.Second)
		// The kill comes at a random moment (real time).
		randomMoment(rng, 1200*time.Millisecond, 2700*time.Millisecond)
		p.kill()
		p = w.startProc("alo", pipeline)
		got, err := workload.ReadTarget(context.Background(), w.db, true)
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, e := range got.Events {
			if seen[e] {
				dups++
			}
			seen[e] = true
		}
	}
	stopProducer()
	p.stop(t)
	t.Logf("at_least_once after kills: %d events loaded twice", dups)
	assert.Positive(t, dups, "the kill loop re-reads committed transactions, which at_least_once loads twice")
}

// TestExactlyOnceSurvivesSIGKILLWhileTheFEIsCommitting kills the pipeline
// process right after the emulator (its own process) took a commit it
// answers FAILED at once but keeps committing for 1.5 s (commit_late): the
// dead process's last transaction lands after its successor has started.
// The successor must find it through the writer row and wait for it before
// it reads the progress, or its replays are applied twice.
func TestExactlyOnceSurvivesSIGKILLWhileTheFEIsCommitting(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	w := eoStart(t, 4)
	pipeline := w.pipelineFile("exactly_once", false)
	stopProducer, stopReader, kills, rng := w.traffic(20, 11)
	p := w.startProc("solo", pipeline)
	// A successor meets the dead process's late commit one of two ways
	// (ARCHITECTURE.md §7): it finds the label committing and waits for it
	// ("became visible while this output waited for it"), or the commit
	// lands while the take-over watches the dead writer's row, which then
	// changes, and the writer is left alone, its commit visible before the
	// progress is read ("N committed meanwhile and were left alone", N > 0).
	waitedFor := func() int { return w.grepLogs("became visible while this output waited for it") }
	leftAlone := func() int { return w.grepLogsRe(`: [1-9][0-9]* committed meanwhile and were left alone`) }
	// Or its take-over marker, committed into the writers table, is made
	// visible only after the late commit (StarRocks publishes a table's
	// commits in commit order): the emulator counts a commit so held.
	held := func() int { return int(w.counters().PublishHeld) }
	waited := func() int { return waitedFor() + leftAlone() + held() }
	// On a loaded machine the successor can start after the late commit
	// landed: then it has nothing to wait for, and the check below that
	// the scenario happened cannot hold. Kill again (at most 4 more
	// times, the commit kept late for 4 s) until a successor waited.
	done := 0
	for i := 0; i < kills || (waited() == 0 && i < kills+4); i++ {
		done++
		delay := "1500ms"
		if i >= kills {
			delay = "4s"
		}
		p.waitLogged(t, "Assigned partitions", 60*time.Second)
		// Past the writer's anchor: the fault hits a commit of data, at a
		// random moment (real time).
		randomMoment(rng, 1500*time.Millisecond, 3*time.Second)
		w.fault(`{"op":"commit","action":"commit_late","delay":"` + delay + `"}`)
		p.kill()
		p = w.startProc("solo", pipeline)
		if i+1 >= kills {
			// Give the successor its start before the loop asks whether
			// it waited: its partitions, then up to the late commit's
			// delay and a second for the wait to show.
			p.waitLogged(t, "Assigned partitions", 60*time.Second)
			lateFor, _ := time.ParseDuration(delay)
			testkit.Poll(lateFor+time.Second, func() bool { return waited() > 0 })
		}
	}
	w.finish(stopProducer, stopReader, []*eoProc{p}, done, true)
	n := waited()
	t.Logf("successors met %d transactions a killed process left committing: waited for %d, saw %d land while watching the writer's row, %d commits held in the publish order behind them", n, waitedFor(), leftAlone(), held())
	assert.Positive(t, n, "a successor met a dead process's committing transaction and let it land before reading the progress")
}

// fault adds an emulator fault over its HTTP admin API and waits until a
// request took it.
func (w *eoWorld) fault(js string) {
	t := w.t
	// The control API takes the emulator's credentials (root, no password).
	req, err := http.NewRequest(http.MethodPost, "http://"+w.httpAddr+"/_emulator/faults", strings.NewReader(js))
	require.NoError(t, err)
	req.SetBasicAuth("root", "")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool {
		req, err := http.NewRequest(http.MethodGet, "http://"+w.httpAddr+"/_emulator/faults", nil)
		if err != nil {
			return false
		}
		req.SetBasicAuth("root", "")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var pending []json.RawMessage
		return json.NewDecoder(resp.Body).Decode(&pending) == nil && len(pending) == 0
	}, 20*time.Second, 5*time.Millisecond, "the fault %s fired", js)
}
