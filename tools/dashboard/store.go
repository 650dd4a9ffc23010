package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"
)

// store is the recorded run: a Prometheus TSDB and the PromQL engine over it.
type store struct {
	db     *tsdb.DB
	engine *promql.Engine
}

func openStore(dir string) (*store, error) {
	opts := tsdb.DefaultOptions()
	opts.OutOfOrderTimeWindow = 0
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the TSDB: %w", err)
	}
	return &store{db: db, engine: promql.NewEngine(promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
	})}, nil
}

func (s *store) Close() error { return s.db.Close() }

// scrapeInto reads one scrape and appends it at ts, with the labels a
// Prometheus server adds (job, instance).
func scrapeInto(s *store, url string, ts time.Time) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("scrape: %w", err)
	}
	app := s.db.Appender(context.Background())
	t := ts.UnixMilli()
	n := 0
	add := func(name string, m *dto.Metric, v float64, extra ...string) error {
		b := labels.NewBuilder(labels.EmptyLabels())
		b.Set("__name__", name)
		b.Set("job", "benthos-starrocks")
		b.Set("instance", "demo")
		for _, l := range m.GetLabel() {
			b.Set(l.GetName(), l.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Set(extra[i], extra[i+1])
		}
		_, err := app.Append(0, b.Labels(), t, v)
		n++
		return err
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var err error
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				err = add(name, m, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				err = add(name, m, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				err = add(name, m, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					if err = add(name+"_bucket", m, float64(b.GetCumulativeCount()), "le", formatLE(b.GetUpperBound())); err != nil {
						break
					}
				}
				if err == nil {
					err = add(name+"_bucket", m, float64(h.GetSampleCount()), "le", "+Inf")
				}
				if err == nil {
					err = add(name+"_sum", m, h.GetSampleSum())
				}
				if err == nil {
					err = add(name+"_count", m, float64(h.GetSampleCount()))
				}
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					if err = add(name, m, q.GetValue(), "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)); err != nil {
						break
					}
				}
				if err == nil {
					err = add(name+"_sum", m, sm.GetSampleSum())
				}
				if err == nil {
					err = add(name+"_count", m, float64(sm.GetSampleCount()))
				}
			}
			if err != nil {
				_ = app.Rollback()
				return 0, fmt.Errorf("appending %s: %w", name, err)
			}
		}
	}
	return n, app.Commit()
}

func formatLE(v float64) string {
	if math.IsInf(v, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// series is one line of a panel.
type series struct {
	name   string
	labels map[string]string
	ts     []time.Time
	vs     []float64
}

func (s *store) rangeQuery(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]*series, error) {
	qry, err := s.engine.NewRangeQuery(ctx, s.db, nil, q, start, end, step)
	if err != nil {
		return nil, err
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	m, err := res.Matrix()
	if err != nil {
		return nil, err
	}
	var out []*series
	for _, sm := range m {
		ls := map[string]string{}
		sm.Metric.Range(func(l labels.Label) { ls[l.Name] = l.Value })
		s := &series{labels: ls}
		for _, p := range sm.Floats {
			s.ts = append(s.ts, time.UnixMilli(p.T))
			s.vs = append(s.vs, p.F)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i].labels) < fmt.Sprint(out[j].labels) })
	return out, nil
}
