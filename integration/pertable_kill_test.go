package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The kill loop in per-table mode: the real binary against the emulator
// process answering as StarRocks 3.3, killed with SIGKILL at random moments
// (STARROCKS_TXN_KILL_LOOP=1 runs the long loop), and killed on purpose
// while a cycle sits between its prepares and its commits. Nothing is lost,
// nothing doubled (exactly_once), every partial read heals, none is left
// once the tables converged, and the FE's records show every cycle's labels
// ended together.

func perTableWorld(t *testing.T) *eoWorld {
	t.Helper()
	w := eoStartAs(t, 4, perTableVersion)
	w.mode, w.heal = "per_table", testkit.NewHeal(perTableHealBound)
	return w
}

func TestPerTableSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	w := perTableWorld(t)
	pipelines := []string{w.pipelineFile("exactly_once", true), w.pipelineFile("exactly_once", false)}
	stopProducer, stopReader, kills, rng := w.traffic(40, 13)
	p := w.startProc("solo", pipelines[0])
	for i := 0; i < kills; i++ {
		// Each run commits before it dies (on a loaded machine a run can
		// take seconds to get going, and one killed before its first
		// commit leaves nothing to skip); the kill comes at a random moment
		// after that (real time).
		commits := w.counters().Commits
		testkit.WaitFor(t, 60*time.Second, func() bool { return w.counters().Commits > commits+2 }, "run %d commits", i)
		randomMoment(rng, 200*time.Millisecond, 2200*time.Millisecond)
		p.kill()
		p = w.startProc("solo", pipelines[(i+1)%2])
	}
	p.waitLogged(t, "Assigned partitions", 60*time.Second)
	w.finish(stopProducer, stopReader, []*eoProc{p}, kills, true)
	checkPerTableCycles(t, w.db)
}

// A process killed while its cycle is between its prepares and its
// commits: "decided" — the decision committed, the first part committed
// and the others refused again and again (a reader sees part of the
// cycle's source transactions until a successor commits the rest);
// "undecided" — the decision's commit refused again and again, every part
// prepared (nothing visible; a successor rolls the cycle back and loads it
// again). The successor settles the cycle by its decision before it applies
// anything.
func TestPerTableSIGKILLBetweenPrepareAndCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	for _, tc := range []struct {
		name, label, verb string
	}{
		{"decided", `-[0-9a-f]{16}-([2-9]|[1-9][0-9]+)$`, "committed with their decision"},
		{"undecided", `-[0-9a-f]{16}$`, "rolled back with their decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := perTableWorld(t)
			pipeline := w.pipelineFile("exactly_once", false)
			stopProducer, stopReader, _, _ := w.traffic(0, 17)
			p := w.startProc("victim", pipeline)
			p.waitLogged(t, "Assigned partitions", 60*time.Second)
			// Past the writer's anchor and a few cycles.
			testkit.WaitFor(t, 30*time.Second, func() bool { return w.counters().Commits > 10 }, "the victim commits")
			fired := w.counters().FaultsFired
			w.addFault(emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActReset, Label: tc.label, Count: 1 << 30})
			// Held there: the commits keep being refused.
			testkit.WaitFor(t, 30*time.Second, func() bool { return w.counters().FaultsFired >= fired+3 },
				"the victim's commits are refused")
			p.kill()
			w.clearFaults()
			succ := w.startProc("successor", pipeline)
			testkit.WaitFor(t, 60*time.Second, func() bool { return succ.logged(tc.verb) > 0 },
				"the successor settled the dead run's cycle (%s)", tc.verb)
			w.finish(stopProducer, stopReader, []*eoProc{succ}, 1, true)
			checkPerTableCycles(t, w.db)
		})
	}
}

// counters reads the emulator process's counters.
func (w *eoWorld) counters() emulator.Counters {
	var c emulator.Counters
	req, err := http.NewRequest(http.MethodGet, "http://"+w.httpAddr+"/_emulator/counters", nil)
	require.NoError(w.t, err)
	req.SetBasicAuth("root", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&c)
	return c
}

// addFault queues f in the emulator process.
func (w *eoWorld) addFault(f emulator.Fault) {
	b, err := json.Marshal(f)
	require.NoError(w.t, err)
	w.admin(http.MethodPost, string(b))
}

// clearFaults drops the emulator process's pending faults.
func (w *eoWorld) clearFaults() { w.admin(http.MethodDelete, "") }

func (w *eoWorld) admin(method, body string) {
	req, err := http.NewRequest(method, "http://"+w.httpAddr+"/_emulator/faults", strings.NewReader(body))
	require.NoError(w.t, err)
	req.SetBasicAuth("root", "")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(w.t, err)
	_ = resp.Body.Close()
	assert.Equal(w.t, http.StatusOK, resp.StatusCode)
}
