package integration

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
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

// The fleet: several OS processes of the built binary in one consumer group
// (kafka_txn → txn_assembler → starrocks_txn, semantic exactly_once) over a
// 12-partition topic of the test process's Kafka, loading the emulator in
// its own process, while a seeded schedule kills (SIGKILL), stops (SIGTERM),
// restarts and adds members. Scaling out across processes through Kafka's
// group protocol is how users outgrow one machine: the other tests run at
// most two pipelines in a group.
//
// Throughout, the harness's reader checks every round that no source
// transaction is half visible and no order goes back, and a second loop
// that no event is in order_events twice. After each change the test
// measures how long the group took to converge — Stable on exactly the
// members that run, every partition owned, and every partition's progress
// row moving again — and requires it within the session timeout plus a
// margin. At the end the tables equal the model of what the producer
// committed (every committed source transaction exactly once), no aborted
// row is there, and the group's offsets reached the end of the topic.
//
// TestFleet is the short form (CI); TestFleetSoak, with
// STARROCKS_TXN_FLEET_SOAK=<duration> (30m), the soak: the same with
// continuous churn around two members never churned, whose heap and
// goroutines must stay flat, the fleet's throughput against one process on
// the same backlog, and each member's peak RSS and the p99 visibility.
// STARROCKS_TXN_SEED replays a run's traffic and schedule (timing varies);
// STARROCKS_TXN_FLEET_BREAK=at_least_once or read_uncommitted runs a
// deliberately broken fleet, which the checks must fail.

const (
	fleetPartitions = 12
	// fleetSessionTimeout is the members' session_timeout: a killed member
	// holds its partitions that long.
	fleetSessionTimeout = 4 * time.Second
	// fleetMargin is what a change may take beyond the session timeout to
	// converge: a member's start (the binary on a loaded machine), the
	// cooperative protocol's two rounds, the fence of revoked partitions
	// (bounded by revoke_timeout), the new owners' takeover of a dead
	// writer's labels and progress read, and a commit cycle.
	fleetMargin = 20 * time.Second
	// fleetPipelineID is the output's pipeline_id: the fleet is one
	// pipeline.
	fleetPipelineID = "fleet"
)

// fleetPlan shapes one run.
type fleetPlan struct {
	// members start the run; anchors of them are never churned.
	members, anchors int
	// minLive and maxLive bound the running members.
	minLive, maxLive int
	// events is the number of changes (the short form); duration, when
	// set, churns that long instead.
	events   int
	duration time.Duration
	// pause is the range of the random pause after a change converged.
	pause [2]time.Duration
	// rate is the source transactions per second of the traffic.
	rate float64
	// sampleEvery is the period of the members' heap, goroutines, RSS and
	// metrics samples.
	sampleEvery time.Duration
	// backlog, when positive, measures the throughput of one process and
	// of the fleet on a backlog of that many source transactions each,
	// before the churn.
	backlog int
	// updateRatio and deleteRatio, when set, replace the harness's traffic
	// mix (35 % updates, 10 % deletes: the orders table grows with every
	// other transaction): the soak deletes about as many orders as it
	// creates, so that its tables, and the reader's rounds over them, stay
	// about the same size for its whole length.
	updateRatio, deleteRatio float64
	// readerPause is the pause between two rounds of the reader.
	readerPause time.Duration
	// semantic and isolation of the pipeline (a broken fleet changes them).
	semantic, isolation string
}

func fleetBreak(p fleetPlan) fleetPlan {
	switch os.Getenv("STARROCKS_TXN_FLEET_BREAK") {
	case "at_least_once":
		p.semantic = "at_least_once"
	case "read_uncommitted":
		p.isolation = "read_uncommitted"
	}
	return p
}

// TestFleet is the short form: three members, five changes (every kind,
// each once where the member count allows), traffic at 60 source
// transactions per second.
func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	runFleet(t, fleetBreak(fleetPlan{
		members: 3, minLive: 2, maxLive: 4, events: 5,
		pause: [2]time.Duration{500 * time.Millisecond, 1500 * time.Millisecond},
		rate:  60, sampleEvery: 2 * time.Second, readerPause: 20 * time.Millisecond,
		semantic: "exactly_once", isolation: "read_committed",
	}))
}

// TestFleetSoak is the soak, behind STARROCKS_TXN_FLEET_SOAK=<duration>.
func TestFleetSoak(t *testing.T) {
	d := os.Getenv("STARROCKS_TXN_FLEET_SOAK")
	if d == "" {
		t.Skip("the fleet soak runs with STARROCKS_TXN_FLEET_SOAK=30m (any duration)")
	}
	dur, err := time.ParseDuration(d)
	require.NoError(t, err, "STARROCKS_TXN_FLEET_SOAK must be a duration")
	runFleet(t, fleetBreak(fleetPlan{
		members: 4, anchors: 2, minLive: 2, maxLive: 5, duration: dur,
		pause: [2]time.Duration{2 * time.Second, 10 * time.Second},
		rate:  40, sampleEvery: 20 * time.Second, backlog: 20000, readerPause: 100 * time.Millisecond,
		updateRatio: 0.55, deleteRatio: 0.2,
		semantic: "exactly_once", isolation: "read_committed",
	}))
}

// The kinds of change.
const (
	evKill        = "SIGKILL"
	evKillRestart = "SIGKILL+restart"
	evTerm        = "SIGTERM"
	evTermRestart = "SIGTERM+restart"
	evJoin        = "join"
)

var fleetEventKinds = []string{evKill, evKillRestart, evTerm, evTermRestart, evJoin}

// pickEvent chooses the next change among those the member bounds allow,
// one not done yet first.
func pickEvent(rng *rand.Rand, plan fleetPlan, live, churnable int, done map[string]int) string {
	var valid, fresh []string
	for _, k := range fleetEventKinds {
		switch k {
		case evKill, evTerm:
			if live-1 < plan.minLive || churnable == 0 {
				continue
			}
		case evKillRestart, evTermRestart:
			if churnable == 0 {
				continue
			}
		case evJoin:
			if live+1 > plan.maxLive {
				continue
			}
		}
		valid = append(valid, k)
		if done[k] == 0 {
			fresh = append(fresh, k)
		}
	}
	if len(fresh) > 0 {
		return fresh[rng.IntN(len(fresh))]
	}
	return valid[rng.IntN(len(valid))]
}

// newFleetRNG is the schedule's random source: the changes, their victims
// and the pauses follow from the run's seed.
func newFleetRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 26)) }

// fleetEvent is one change and how the group took it.
type fleetEvent struct {
	kind, member, started string
	live                  int
	conv                  convergence
}

func (e fleetEvent) String() string {
	s := fmt.Sprintf("%-16s %-4s", e.kind, e.member)
	if e.started != "" {
		s += " → " + e.started
	}
	return fmt.Sprintf("%-26s %d running: settled after %s, progressing after %s", s, e.live,
		e.conv.settled.Round(10*time.Millisecond), e.conv.progressing.Round(10*time.Millisecond))
}

// fleetFileFor writes the members' pipeline file.
func fleetFileFor(t *testing.T, dir string, brokers []string, feAddr, mysqlAddr string, plan fleetPlan) string {
	yaml := fmt.Sprintf(`
http:
  enabled: true
  address: ${FLEET_HTTP}
  debug_endpoints: true
metrics:
  prometheus:
    add_go_metrics: true
    add_process_metrics: true
    histogram_buckets: [ 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300 ]
logger: { level: info, format: logfmt }
shutdown_timeout: 20s
input:
  kafka_txn:
    seed_brokers: [ %q ]
    topics: [ %s ]
    consumer_group: fleet
    client_id: ${FLEET_MEMBER}
    start_after_progress: ${FLEET_SEEK}
    isolation_level: %s
    commit_period: 2s
    session_timeout: %s
    heartbeat_interval: 400ms
    rebalance_timeout: 8s
    revoke_timeout: 3s
    fetch_max_wait: 100ms
    batching: { count: 8, period: 20ms }
  processors:
    - txn_assembler: { format: envelope }
output:
  starrocks_txn:
    load_urls: [ "http://%s" ]
    mysql_address: %q
    semantic: %s
    pipeline_id: %s
    commit_interval: 300ms
    txn_timeout: 20s
    request_timeout: 3s
    label_state_wait: 500ms
    retry_backoff: { initial_interval: 50ms, max_interval: 500ms }
`, strings.Join(brokers, ","), topic, plan.isolation, fleetSessionTimeout, feAddr, mysqlAddr, plan.semantic, fleetPipelineID)
	path := filepath.Join(dir, "fleet.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

// startEmulatorProcess runs the binary's emulator subcommand and returns
// its FE HTTP address and a SQL client of its MySQL port.
func startEmulatorProcess(t *testing.T, bin, dir string) (httpAddr, sqlAddr string, db *sql.DB) {
	httpAddr, sqlAddr = eoFreeAddr(t), eoFreeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "emulator.log"))
	require.NoError(t, err)
	em := exec.Command(bin, "emulator", "--http", httpAddr, "--mysql", sqlAddr, "--schema", "../examples/schema.sql")
	em.Stdout, em.Stderr = logf, logf
	require.NoError(t, em.Start())
	t.Cleanup(func() {
		_ = em.Process.Signal(syscall.SIGTERM)
		_ = em.Wait()
		_ = logf.Close()
	})
	db = emurig.Open(t, sqlAddr)
	testkit.WaitFor(t, 30*time.Second, func() bool { return db.Ping() == nil }, "the emulator process answers on its MySQL port")
	return httpAddr, sqlAddr, db
}

// fleetRun is one run's world and its records.
type fleetRun struct {
	t     *testing.T
	plan  fleetPlan
	env   *fleetEnv
	r     *rig
	src   *source
	watch *groupWatch
	rng   *rand.Rand

	// live are the running members, by id (liveMu guards it while
	// members start concurrently: the throughput phases).
	liveMu sync.Mutex
	live   map[string]*fleetMember
	events []fleetEvent
	done   map[string]int
	// unexpected holds members that exited without being told to.
	unexpected []string
}

func (f *fleetRun) liveIDs() map[string]bool {
	ids := map[string]bool{}
	for id := range f.live {
		ids[id] = true
	}
	return ids
}

func (f *fleetRun) churnable() []*fleetMember {
	var ms []*fleetMember
	for _, m := range f.live {
		if !m.anchor {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].started.Before(ms[j].started) })
	return ms
}

func (f *fleetRun) startMember(anchor bool) *fleetMember {
	m, err := f.env.start(anchor)
	require.NoError(f.t, err)
	f.live[m.id] = m
	return m
}

// checkAlive records members that exited on their own.
func (f *fleetRun) checkAlive() {
	for id, m := range f.live {
		if !m.alive() {
			f.unexpected = append(f.unexpected, fmt.Sprintf("%s exited on its own:\n%s", id, m.logTail(20)))
			delete(f.live, id)
		}
	}
}

// apply makes one change and waits for the group to converge.
func (f *fleetRun) apply(kind string) fleetEvent {
	t := f.t
	ev := fleetEvent{kind: kind}
	var victim *fleetMember
	if kind != evJoin {
		ms := f.churnable()
		victim = ms[f.rng.IntN(len(ms))]
		ev.member = victim.id
	}
	from := time.Now()
	switch kind {
	case evKill, evKillRestart:
		victim.sigkill()
		delete(f.live, victim.id)
	case evTerm, evTermRestart:
		if !victim.sigterm(45 * time.Second) {
			t.Errorf("%s did not stop gracefully (exit status 0) within 45s of SIGTERM:\n%s", victim.id, victim.logTail(20))
		}
		delete(f.live, victim.id)
	}
	if kind == evKillRestart || kind == evTermRestart || kind == evJoin {
		ev.started = f.startMember(false).id
	}
	ev.live = len(f.live)
	ev.conv = f.watch.converge(from, f.liveIDs(), 2*(fleetSessionTimeout+fleetMargin))
	f.done[kind]++
	f.checkAlive()
	return ev
}

// fleetReader is the harness's reader run at the plan's pace, and a loop
// that counts events present twice in order_events.
type fleetReader struct {
	rd     *reader
	dupMax atomic.Int64
	dupRds atomic.Int64
	stop   func()
}

func startFleetReader(db *sql.DB, pause time.Duration, dupEvery time.Duration) *fleetReader {
	ctx, cancel := context.WithCancel(context.Background())
	rd := &reader{db: db, checkOrder: true, versions: map[int64]int64{}, gone: map[int64]bool{},
		seen: map[orderVersion]bool{}, cancel: cancel, done: make(chan struct{})}
	fr := &fleetReader{rd: rd}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(rd.done)
		for ctx.Err() == nil {
			// At most half of the time: a round over large tables takes
			// the emulator a while, and the pipelines need it too.
			began := time.Now()
			err := rd.round(ctx)
			p := max(pause, time.Since(began))
			if err != nil && ctx.Err() == nil {
				rd.lastErr = err.Error()
				p = max(pause, 50*time.Millisecond)
			}
			sleepCtx(ctx, p)
		}
	}()
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			var dups int64
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) - COUNT(DISTINCT event_id) FROM test.order_events").Scan(&dups); err == nil {
				fr.dupRds.Add(1)
				if dups > fr.dupMax.Load() {
					fr.dupMax.Store(dups)
				}
			}
			sleepCtx(ctx, dupEvery)
		}
	}()
	fr.stop = func() { cancel(); wg.Wait() }
	return fr
}

// sampler samples every running member every period.
func (f *fleetRun) startSampler(every time.Duration) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sleepCtx(ctx, every) {
			for _, m := range f.env.members() {
				if m.alive() {
					m.sample()
				}
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func runFleet(t *testing.T, plan fleetPlan) {
	began := time.Now()
	seed := testSeed(t)
	t.Logf("fleet: %s, %s, isolation %s; load average %s", fleetShape(plan), plan.semantic, plan.isolation, loadAvg())
	bin := eoBuildBinary(t)
	dir := t.TempDir()
	t.Cleanup(func() {
		if keep := os.Getenv("STARROCKS_TXN_KEEP_LOGS"); keep != "" && t.Failed() {
			dst := filepath.Join(keep, fmt.Sprintf("fleet-%d", time.Now().UnixNano()))
			_ = exec.Command("cp", "-r", dir, dst).Run()
			t.Logf("logs kept in %s", dst)
		}
	})
	feAddr, sqlAddr, db := startEmulatorProcess(t, bin, dir)
	k := kafka.New(t, kafka.Topic(topic, fleetPartitions, nil))
	r := &rig{kafka: k, brokers: k.Brokers(), db: db, partitions: fleetPartitions}
	src := newSource(t, r, seed, 0.2)
	if plan.deleteRatio > 0 {
		src.gen = workload.NewGenerator(workload.Options{Partitions: fleetPartitions, Seed: seed, Events: true,
			UpdateRatio: plan.updateRatio, DeleteRatio: plan.deleteRatio})
	}
	env := &fleetEnv{bin: bin, pipeline: fleetFileFor(t, dir, r.brokers, feAddr, sqlAddr, plan), dir: dir}
	t.Cleanup(env.killAll)
	watch, err := newGroupWatch(r.brokers, db, "fleet", fleetPartitions, fleetPipelineID, plan.semantic == "exactly_once")
	require.NoError(t, err)
	t.Cleanup(watch.close)
	f := &fleetRun{t: t, plan: plan, env: env, r: r, src: src, watch: watch,
		rng: newFleetRNG(seed), live: map[string]*fleetMember{}, done: map[string]int{}}
	defer func() {
		if t.Failed() {
			for _, m := range env.members() {
				t.Logf("member %s, last lines:\n%s", m.id, m.logTail(15))
			}
		}
	}()

	fr := startFleetReader(db, plan.readerPause, max(plan.sampleEvery/4, time.Second))
	defer fr.stop()

	var tput *fleetThroughput
	if plan.backlog > 0 {
		tput = f.measureThroughput()
	} else {
		for i := 0; i < plan.members; i++ {
			f.startMember(i < plan.anchors)
		}
	}
	// The traffic, then the fleet's first convergence (from the moment its
	// members' HTTP servers answered).
	ctx, cancelTraffic := context.WithCancel(context.Background())
	defer cancelTraffic()
	wait := src.background(ctx, 0, plan.rate)
	first := f.watch.converge(time.Now(), f.liveIDs(), 3*(fleetSessionTimeout+fleetMargin))
	require.Empty(t, first.stuck, "the fleet of %d converges at start", len(f.live))
	t.Logf("the fleet of %d converged at start: settled after %s, progressing after %s", len(f.live), first.settled.Round(10*time.Millisecond), first.progressing.Round(10*time.Millisecond))
	churnFrom := time.Now()
	// The measured phase starts: what every member observed so far (a
	// member that is gone keeps its last scrape) is left out.
	for _, m := range env.members() {
		m.markBaseline()
	}
	stopSampler := f.startSampler(plan.sampleEvery)

	// The churn.
	for i := 0; ; i++ {
		if plan.duration > 0 && time.Since(churnFrom) >= plan.duration {
			break
		}
		if plan.duration == 0 && i >= plan.events {
			break
		}
		kind := pickEvent(f.rng, plan, len(f.live), len(f.churnable()), f.done)
		ev := f.apply(kind)
		f.events = append(f.events, ev)
		t.Logf("change %d: %s", i+1, ev)
		if ev.conv.stuck != "" {
			t.Errorf("change %d (%s) did not converge within %s: %s", i+1, ev, 2*(fleetSessionTimeout+fleetMargin), ev.conv.stuck)
			break
		}
		if len(f.unexpected) > 0 {
			break
		}
		randomMoment(f.rng, plan.pause[0], plan.pause[1]) // the next change's moment
	}
	churned := time.Since(churnFrom)

	// The end: the producer stops, the fleet catches up, the tables equal
	// the model, the members stop gracefully.
	cancelTraffic()
	require.NoError(t, wait())
	require.Empty(t, f.unexpected, "members exited without being told to")
	r.waitConverged(t, src, false, 120*time.Second)
	stopSampler()
	for _, m := range f.live {
		m.sample()
	}
	for _, m := range f.live {
		assert.True(t, m.sigterm(45*time.Second), "%s stops gracefully (exit status 0) within 45s of SIGTERM:\n%s", m.id, m.logTail(20))
	}
	fr.stop()

	// The checks.
	checkReader(t, fr.rd, src)
	checkNoAbortedEvents(t, r, src)
	assert.Zero(t, fr.dupMax.Load(), "a reader saw an event in order_events twice")
	want := map[int32]int64{}
	src.mu.Lock()
	for p, o := range src.ends {
		want[p] = o + 1
	}
	src.mu.Unlock()
	lagCtx, cancelLag := context.WithTimeout(context.Background(), 30*time.Second)
	behind, err := groupLag(lagCtx, r.brokers, "fleet", map[string]map[int32]int64{topic: want})
	cancelLag()
	require.NoError(t, err)
	assert.Empty(t, behind, "every partition's group offset reached the end of what was produced")
	bound := fleetSessionTimeout + fleetMargin
	var slowest time.Duration
	for i, ev := range f.events {
		slowest = max(slowest, ev.conv.progressing)
		if ev.conv.stuck == "" {
			assert.LessOrEqual(t, ev.conv.progressing, bound, "change %d (%s) converged within the session timeout (%s) plus %s", i+1, ev, fleetSessionTimeout, fleetMargin)
		}
	}

	// The figures.
	f.report(began, churned, fr, tput, slowest)
}

// fleetThroughput is one process's and the fleet's time to load the same
// size of backlog.
type fleetThroughput struct {
	rows         int64
	one, fleet   time.Duration // from the processes' launch to the last row visible
	oneC, fleetC time.Duration // from the first commit to the last row visible
	members      int
}

// measureThroughput loads a backlog with one member, stops it, loads an
// equal backlog with the plan's members (who then stay for the churn).
func (f *fleetRun) measureThroughput() *fleetThroughput {
	t, plan := f.t, f.plan
	tp := &fleetThroughput{members: plan.members}
	drain := func(start func()) (rows int64, total, fromCommit time.Duration) {
		before, records := f.src.committed.Load(), f.src.records.Load()
		require.NoError(t, f.src.produce(context.Background(), int(before)+plan.backlog, 5000))
		committed := f.src.committed.Load()
		rows = (f.src.records.Load() - records) - 2*(committed-before)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		base, err := f.watch.progress(ctx)
		cancel()
		require.NoError(t, err)
		launched := time.Now()
		// The members start while the poll below watches: the clock runs
		// from their launch.
		started := make(chan struct{})
		go func() { defer close(started); start() }()
		var firstCommit time.Time
		testkit.WaitFor(t, 15*time.Minute, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if firstCommit.IsZero() {
				if now, err := f.watch.progress(ctx); err == nil {
					for p, o := range now {
						if b, ok := base[p]; !ok || o > b {
							firstCommit = time.Now()
							break
						}
					}
				}
			}
			var n int64
			return f.r.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM test.order_events").Scan(&n) == nil && n >= committed
		}, "the backlog of %d source transactions is loaded", plan.backlog)
		done := time.Now()
		<-started
		if firstCommit.IsZero() {
			firstCommit = done
		}
		return rows, done.Sub(launched), done.Sub(firstCommit)
	}
	// Members start at once, each in its own goroutine; a failed start is
	// reported once they all returned.
	launch := func(n, anchors int) func() {
		return func() {
			ms := make([]*fleetMember, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ms[i], errs[i] = f.env.start(i < anchors)
				}()
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Errorf("starting a member: %v", errs[i])
					continue
				}
				f.liveMu.Lock()
				f.live[ms[i].id] = ms[i]
				f.liveMu.Unlock()
			}
		}
	}
	tp.rows, tp.one, tp.oneC = drain(launch(1, 0))
	require.Len(t, f.live, 1, "the single member started")
	for _, one := range f.live {
		require.True(t, one.sigterm(45*time.Second), "the single member stops gracefully")
		delete(f.live, one.id)
	}
	rows, total, fromCommit := drain(launch(plan.members, plan.anchors))
	require.Len(t, f.live, plan.members, "the fleet's members started")
	tp.rows = min(tp.rows, rows) // the same size, give or take a Kafka transaction
	tp.fleet, tp.fleetC = total, fromCommit
	t.Logf("throughput: %d rows by 1 process in %s (%s from its first commit), by %d in %s (%s)",
		tp.rows, tp.one.Round(time.Millisecond), tp.oneC.Round(time.Millisecond), plan.members, tp.fleet.Round(time.Millisecond), tp.fleetC.Round(time.Millisecond))
	return tp
}

func fleetShape(p fleetPlan) string {
	churn := fmt.Sprintf("%d changes", p.events)
	if p.duration > 0 {
		churn = "churn for " + p.duration.String()
	}
	return fmt.Sprintf("%d members (%d never churned), %d–%d running, %s, %.0f source txns/s over %d partitions",
		p.members, p.anchors, p.minLive, p.maxLive, churn, p.rate, fleetPartitions)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " / ")
}

// report logs the run's figures and, in the soak, asserts that the
// long-lived members' heap and goroutines stayed flat.
func (f *fleetRun) report(began time.Time, churned time.Duration, fr *fleetReader, tput *fleetThroughput, slowest time.Duration) {
	t, plan := f.t, f.plan
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	add("fleet: %s; %s of churn, %s in all; load average at the end %s", fleetShape(plan), churned.Round(time.Second), time.Since(began).Round(time.Second), loadAvg())
	add("traffic: %d source transactions committed, %d aborted (%d records); reader rounds %d (last error: %s); duplicate checks %d",
		f.src.committed.Load(), f.src.aborted.Load(), f.src.records.Load(), fr.rd.rounds.Load(), fr.rd.lastErr, fr.dupRds.Load())
	var kinds []string
	for _, k := range fleetEventKinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, f.done[k]))
	}
	add("changes: %d (%s); convergence (to progressing) slowest %s, bound %s", len(f.events), strings.Join(kinds, ", "), slowest.Round(10*time.Millisecond), fleetSessionTimeout+fleetMargin)
	for _, k := range fleetEventKinds {
		var ds []time.Duration
		for _, ev := range f.events {
			if ev.kind == k && ev.conv.stuck == "" {
				ds = append(ds, ev.conv.progressing)
			}
		}
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		add("  %-16s median %s, max %s (%d)", k, ds[len(ds)/2].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond), len(ds))
	}
	seeks, drops := 0, 0
	vis := histogram{}
	var rssLines []string
	var anchors []*fleetMember
	for _, m := range f.env.members() {
		seeks += m.logged("after the output's committed progress")
		drops += m.logged("dropping replays StarRocks already holds")
		peak, samples, scrape, base := m.figures()
		vis.add(scrape.buckets("starrocks_txn_visibility_latency_ns"), base.buckets("starrocks_txn_visibility_latency_ns"))
		rssLines = append(rssLines, fmt.Sprintf("%s %.0f MiB", m.id, mib(peak)))
		if m.anchor || (plan.duration > 0 && len(samples) >= 9) {
			anchors = append(anchors, m)
		}
	}
	add("replays: %d partition starts after the output's progress, %d partition states that dropped replays StarRocks held", seeks, drops)
	add("peak RSS (VmHWM) per member: %s", strings.Join(rssLines, ", "))
	if p99, ok := vis.quantile(0.99); ok {
		p50, _ := vis.quantile(0.5)
		add("visibility (starrocks_txn_visibility_latency_ns, every member, during the churn; killed members up to their last sample): p50 %s, p99 %s over %.0f source transactions",
			p50.Round(time.Millisecond), p99.Round(time.Millisecond), vis.count())
	}
	if tput != nil {
		rate := func(d time.Duration) float64 { return float64(tput.rows) / d.Seconds() }
		add("throughput on a backlog of %d source transactions (%d rows): 1 process %.0f rows/s (%.0f from its first commit), %d processes %.0f rows/s (%.0f); fleet ÷ one %.2f (%.2f)",
			plan.backlog, tput.rows, rate(tput.one), rate(tput.oneC), tput.members, rate(tput.fleet), rate(tput.fleetC),
			rate(tput.fleet)/rate(tput.one), rate(tput.fleetC)/rate(tput.oneC))
	}
	for _, m := range anchors {
		_, samples, _, _ := m.figures()
		var heap, gor []float64
		for _, s := range samples {
			// A member's first minute is its warm-up.
			if s.at < time.Minute && plan.duration > 0 {
				continue
			}
			heap = append(heap, float64(s.heap))
			gor = append(gor, float64(s.goroutines))
		}
		h, g := thirds(heap), thirds(gor)
		add("member %s (%s): heap after GC %.1f → %.1f MiB, goroutines %.0f → %.0f (medians of the first and last thirds, %d samples)",
			m.id, map[bool]string{true: "never churned", false: "long-lived"}[m.anchor], h.first/(1<<20), h.last/(1<<20), g.first, g.last, h.n)
		if plan.duration > 0 {
			assert.True(t, h.flat(1.25, 4<<20), "member %s's heap after GC stays flat (last third's median within 1.25× the first's + 4 MiB): %s", m.id, h)
			assert.True(t, g.flat(1.25, 20), "member %s's goroutines stay flat (last third's median within 1.25× the first's + 20): %s", m.id, g)
		}
	}
	t.Log("fleet figures:\n" + strings.Join(lines, "\n"))
}
