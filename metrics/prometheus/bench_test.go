package prometheus_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Benthos calls the constructor with the label values on every Incr, so this
// is the cost of one labelled counter increment.
func BenchmarkLabelledCounterIncr(b *testing.B) {
	e := newExporter(b, `{}`)
	ctor := e.NewCounterCtor("bench_counter", "database", "table")
	b.ReportAllocs()
	for b.Loop() {
		ctor("db", "orders").Incr(1)
	}
}

func BenchmarkTimerObserve(b *testing.B) {
	e := newExporter(b, `{}`)
	ctor := e.NewTimerCtor("bench_latency_ns", "database")
	b.ReportAllocs()
	for b.Loop() {
		ctor("db").Timing(123456789)
	}
}

// Concurrent declarations and updates of the same metrics lose nothing (run
// with -race).
func TestConcurrentUse(t *testing.T) {
	e := newExporter(t, `{}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				e.NewCounterCtor("conc", "k")("v").Incr(1)
				e.NewTimerCtor("conc_ns")().Timing(1)
				e.NewGaugeCtor("conc_g")().Set(1)
			}
		}()
	}
	wg.Wait()
	fams := parse(t, serveMux(t, e.HandlerFunc()))
	assert.InDelta(t, 8000, series(t, fams, "conc", map[string]string{"k": "v"}).GetCounter().GetValue(), 1e-9)
	assert.EqualValues(t, 8000, fams["conc_ns"].GetMetric()[0].GetHistogram().GetSampleCount())
	assert.Len(t, e.Families(), 3)
}
