// Command dashboard renders the Grafana dashboard (config/grafana-dashboard.json)
// headless, from a recorded run of the project's demo, into a PNG.
//
// It runs `go run . demo` in the repository with the prometheus exporter on a
// listener of its own, scrapes it every second into a Prometheus TSDB in a
// temporary directory (labels job="benthos-starrocks", instance="demo"),
// optionally makes the emulator fail a few commits part-way through (so the
// retry, rollback and lag panels have something to show), then evaluates
// every target of the chosen panels with Prometheus's own PromQL engine over
// the run and draws them with gonum/plot. No Grafana, no browser.
//
//	cd tools/dashboard && go run . -out ../../docs/dashboard.png
//
// It is its own module, so neither its dependencies nor the demo's minute of
// running are part of the project's build and tests.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

func main() {
	repo := flag.String("repo", "../..", "the repository (where `go run . demo` runs)")
	out := flag.String("out", "../../docs/dashboard.png", "the PNG to write")
	duration := flag.Duration("duration", 90*time.Second, "how long the demo produces")
	rate := flag.Float64("rate", 300, "source transactions per second")
	partitions := flag.Int("partitions", 4, "Kafka partitions")
	faultAt := flag.Duration("fault-at", 30*time.Second, "when, after the first scrape, the emulator starts failing commits (0: never)")
	faults := flag.Int("fault-count", 6, "how many commits in a row the emulator fails")
	panels := flag.String("panels", defaultPanels, "panel titles to draw, separated by ';', or 'all' for every timeseries panel")
	width := flag.Int("width", 1800, "image width in pixels")
	flag.Parse()

	if err := run(*repo, *out, *duration, *rate, *partitions, *faultAt, *faults, *panels, *width); err != nil {
		log.Fatal(err)
	}
}

// defaultPanels are the panels of the README's picture.
// Titles are separated by ';': a title may hold a comma.
const defaultPanels = "Visibility latency p50 / p99;Commits / s;Rollbacks / s;Cycle retries by reason, and StarRocks answering;" +
	"Source transactions committed / s;Rows committed / s per table;Waiting WriteBatch calls;Buffered bytes vs buffer_size;" +
	"Committed lag per partition;Stalled partitions;Lag and committed lag per partition;Offset commits / s"

func run(repo, out string, duration time.Duration, rate float64, partitions int, faultAt time.Duration, faults int, panelList string, width int) error {
	metricsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	emuAddr, err := freeAddr()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "dashboard-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	pipeline, err := os.ReadFile(filepath.Join(repo, "examples", "demo.yaml"))
	if err != nil {
		return fmt.Errorf("reading the demo pipeline: %w", err)
	}
	conf := filepath.Join(tmp, "pipeline.yaml")
	err = os.WriteFile(conf, append(pipeline, []byte(fmt.Sprintf("\nmetrics:\n  prometheus:\n    listen_address: %q\n", metricsAddr))...), 0o644)
	if err != nil {
		return err
	}

	store, err := openStore(filepath.Join(tmp, "tsdb"))
	if err != nil {
		return err
	}
	defer store.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", ".", "demo", "--config", conf,
		"--duration", duration.String(), "--rate", fmt.Sprint(rate), "--partitions", fmt.Sprint(partitions),
		"--http", emuAddr, "--mysql", "127.0.0.1:0")
	cmd.Dir = repo
	var demoOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &demoOut, &demoOut
	log.Printf("running the demo for %s (metrics on %s, emulator on %s)", duration, metricsAddr, emuAddr)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the demo: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var start, end time.Time
	var wg sync.WaitGroup
	faulted := false
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	scrapes := 0
loop:
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("the demo failed: %w\n%s", err, demoOut.String())
			}
			break loop
		case now := <-tick.C:
			n, err := scrapeInto(store, "http://"+metricsAddr+"/metrics", now)
			if err != nil {
				continue // not up yet, or going down
			}
			if start.IsZero() {
				start = now
				log.Printf("first scrape: %d samples", n)
			}
			end = now
			scrapes++
			if faultAt > 0 && !faulted && now.Sub(start) >= faultAt {
				faulted = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := injectFaults(emuAddr, faults); err != nil {
						log.Printf("injecting faults: %v", err)
					} else {
						log.Printf("the emulator aborts the next %d commits", faults)
					}
				}()
			}
		}
	}
	wg.Wait()
	if scrapes < 10 {
		return fmt.Errorf("only %d scrapes: the demo's exporter was not reachable\n%s", scrapes, demoOut.String())
	}
	log.Printf("%d scrapes over %s; demo summary:\n%s", scrapes, end.Sub(start).Round(time.Second), lastLines(demoOut.String(), 12))

	raw, err := os.ReadFile(filepath.Join(repo, "config", "grafana-dashboard.json"))
	if err != nil {
		return err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("reading the dashboard: %w", err)
	}
	chosen, err := choose(d.Panels, panelList)
	if err != nil {
		return err
	}
	vars := map[string]string{"job": ".*", "instance": ".*", "database": ".*", "buffer_size": "134217728"}
	var drawn []drawnPanel
	for _, p := range chosen {
		dp := drawnPanel{title: p.Title, unit: p.FieldConfig.Defaults.Unit}
		for _, t := range p.Targets {
			q := expand(t.Expr, vars, end.Sub(start))
			series, err := store.rangeQuery(ctx, q, start, end, time.Second)
			if err != nil {
				return fmt.Errorf("panel %q: %s: %w", p.Title, q, err)
			}
			for _, s := range series {
				s.name = legend(t.LegendFormat, s.labels)
				dp.series = append(dp.series, s)
			}
		}
		drawn = append(drawn, dp)
	}
	if err := render(out, d.Title, drawn, start, end, width); err != nil {
		return err
	}
	log.Printf("wrote %s (%d panels)", out, len(drawn))
	return nil
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Panels []panel `json:"panels"`
}

type dashboard struct {
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

func choose(ps []panel, list string) ([]panel, error) {
	var flat []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "timeseries" {
				flat = append(flat, p)
			}
			walk(p.Panels)
		}
	}
	walk(ps)
	if list == "all" {
		return flat, nil
	}
	var out []panel
	for _, title := range strings.Split(list, ";") {
		found := false
		for _, p := range flat {
			if p.Title == strings.TrimSpace(title) {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no timeseries panel titled %q", title)
		}
	}
	return out, nil
}

var (
	rangeVar = regexp.MustCompile(`\$\{?__(rate_interval|interval)\}?`)
	fullVar  = regexp.MustCompile(`\$\{?__range\}?`)
	anyVar   = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	legendRE = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
)

// expand substitutes Grafana's variables: the rate interval is four scrape
// intervals (Grafana's rule), $__range the whole run.
func expand(expr string, vars map[string]string, span time.Duration) string {
	expr = rangeVar.ReplaceAllString(expr, "4s")
	expr = fullVar.ReplaceAllString(expr, fmt.Sprintf("%ds", int(span.Seconds())+1))
	return anyVar.ReplaceAllStringFunc(expr, func(m string) string {
		name := anyVar.FindStringSubmatch(m)[1]
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}

func legend(format string, labels map[string]string) string {
	if format == "" {
		var parts []string
		for k, v := range labels {
			parts = append(parts, k+"="+v)
		}
		return strings.Join(parts, ",")
	}
	return legendRE.ReplaceAllStringFunc(format, func(m string) string {
		return labels[legendRE.FindStringSubmatch(m)[1]]
	})
}

func injectFaults(addr string, n int) error {
	body := fmt.Sprintf(`{"op":"commit","action":"commit_abort","count":%d}`, n)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/_emulator/faults", strings.NewReader(body))
	if err != nil {
		return err
	}
	// The control API takes the API's credentials: the demo's root user.
	req.SetBasicAuth("root", "")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
