package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/commands/produce"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// firstHourSteps are the commands of the README's "Your first hour", in
// order; TestFirstHour checks that the README shows exactly these.
var firstHourSteps = []string{
	"./benthos-starrocks emulator --schema examples/schema.sql",
	"./benthos-starrocks kafka --topics cdc:4",
	"./benthos-starrocks -c config/envelope.yaml",
	"./benthos-starrocks produce --format envelope --txns 200",
	"mysql -h 127.0.0.1 -P 9030 -u root -e 'SELECT COUNT(*) FROM test.orders'",
	"mysql -h 127.0.0.1 -P 9030 -u root -e 'SELECT o.order_id, o.total_amount, SUM(i.quantity * i.price) AS items FROM test.orders o JOIN test.order_items i USING (order_id) GROUP BY o.order_id, o.total_amount ORDER BY o.order_id LIMIT 5'",
	"curl -s 127.0.0.1:4195/metrics | grep -E '^starrocks_txn_(commits|source_txns_committed|rows_committed)'",
}

// process is one long-running command of the guide, its output collected.
type process struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs bin with args in dir and env, collecting its output.
func start(t *testing.T, name, dir string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	r, w := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	require.NoError(t, p.cmd.Start(), name)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	go func() {
		_ = p.cmd.Wait()
		w.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop interrupts the process (Ctrl-C) and waits for it to end.
func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop on Ctrl-C:\n%s", p.name, p.output())
	}
}

// await waits until the process printed a line matching re, and returns
// its submatches.
func (p *process) await(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.output()); m != nil {
			return m
		}
		select {
		case <-p.done:
			t.Fatalf("%s ended:\n%s", p.name, p.output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not print %s:\n%s", p.name, re, p.output())
	return nil
}

func freePort(t *testing.T) string { return testkit.FreeAddr(t) }

// The README's first-hour guide, followed with the built binary as a newcomer
// would on a fresh clone: the emulator, the local Kafka, a shipped config as
// it is, sample transactions, the guide's SQL and the metrics. Only the
// addresses differ (free ports, so that it runs beside anything), given the
// way the guide says (flags, and the environment variables the config
// reads). The tables must equal what produce wrote, every order whole.
func TestFirstHour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	began := time.Now()
	block := readmeBlock(t, "<!-- TestFirstHour")
	var shown []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			shown = append(shown, l)
		}
	}
	require.Equal(t, firstHourSteps, shown, "the README's first hour is what this test follows")

	repo, err := filepath.Abs(".")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "benthos-starrocks")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build -o benthos-starrocks .: %s", out)
	built := time.Since(began)

	// 1. The emulator.
	feAddr, myAddr := freePort(t), freePort(t)
	em := start(t, "emulator", repo, nil, bin, "emulator", "--schema", "examples/schema.sql", "--http", feAddr, "--mysql", myAddr)
	em.await(t, regexp.MustCompile(`listening: fe=http://`+regexp.QuoteMeta(feAddr)))

	// 2. The Kafka.
	kafka := start(t, "kafka", repo, nil, bin, "kafka", "--topics", "cdc:4", "--addr", "127.0.0.1:0")
	broker := kafka.await(t, regexp.MustCompile(`kafka: listening on (127\.0\.0\.1:\d+)`))[1]
	kafka.await(t, regexp.MustCompile(`topic cdc: 4 partitions, created`))

	// 3. The pipeline, the config as shipped.
	metricsAddr := freePort(t)
	pipeline := start(t, "pipeline", repo, []string{
		"KAFKA_BROKERS=" + broker, "STARROCKS_LOAD_URL=http://" + feAddr, "STARROCKS_MYSQL_ADDRESS=" + myAddr, "HTTP_ADDRESS=" + metricsAddr,
	}, bin, "-c", "config/envelope.yaml")

	// 4. The source transactions.
	prod := start(t, "produce", repo, nil, bin, "produce", "--format", "envelope", "--txns", "200", "--brokers", broker)
	select {
	case <-prod.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("produce did not end:\n%s", prod.output())
	}
	require.Zero(t, prod.cmd.ProcessState.ExitCode(), prod.output())
	model, err := produce.Model(produce.FormatEnvelope, 4, 1, 200)
	require.NoError(t, err)
	want := model.Snapshot()
	assert.Contains(t, prod.output(), "produce: 200 source transactions (")
	assert.Contains(t, prod.output(), fmt.Sprintf("they leave test.orders %d rows, test.order_items %d rows and test.order_events %d rows", len(want.Orders), len(want.Items), len(want.Events)))

	// 5. The guide's SQL, over the MySQL port.
	db, err := sql.Open("mysql", "root@tcp("+myAddr+")/")
	require.NoError(t, err)
	defer db.Close()
	require.Eventually(t, func() bool {
		var n int
		return db.QueryRow("SELECT COUNT(*) FROM test.orders").Scan(&n) == nil && n == len(want.Orders)
	}, 60*time.Second, 100*time.Millisecond, "the orders arrive; pipeline:\n%s", pipeline.output())
	require.Eventually(t, func() bool {
		got, err := workload.ReadTarget(context.Background(), db, true)
		return err == nil && len(workload.Compare(want, got)) == 0
	}, 30*time.Second, 100*time.Millisecond, "the tables equal what produce wrote")
	query := strings.TrimSuffix(strings.SplitN(firstHourSteps[5], " -e '", 2)[1], "'")
	rows, err := db.Query(query)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var id int64
		var total, items string
		require.NoError(t, rows.Scan(&id, &total, &items))
		assert.Equal(t, normalize(total), normalize(items), "order %d: its total is its items' sum", id)
		n++
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, 5, n)
	torn, orphans, err := workload.CheckConsistency(context.Background(), db)
	require.NoError(t, err)
	assert.Zero(t, torn+orphans)

	// 6. The metrics.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	metric := regexp.MustCompile(`(?m)^starrocks_txn_(commits|source_txns_committed|rows_committed)\{`)
	assert.Len(t, uniq(metric.FindAllStringSubmatch(string(body), -1)), 3, "the three metrics the guide greps")
	assert.Regexp(t, `(?m)^starrocks_txn_source_txns_committed\{[^}]*\} 200$`, string(body))

	// Ctrl-C stops each.
	for _, p := range []*process{pipeline, kafka, em} {
		p.stop(t)
	}
	assert.Contains(t, kafka.output(), "kafka: stopped")
	t.Logf("the first hour took %s (of which the build %s)", time.Since(began).Round(time.Second), built.Round(time.Second))
}

// normalize drops a decimal's trailing zeros (30.00 and 30.0000 are one
// amount).
func normalize(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func uniq(ms [][]string) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		out[m[1]] = true
	}
	return out
}
