package integration

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fleet's figures come from these helpers: a wrong parse or quantile
// would report figures no member measured.

func TestFleetParsesPrometheusText(t *testing.T) {
	s := parseProm([]byte(`# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 1088
starrocks_txn_visibility_latency_ns_bucket{database="test",label="",path="root.output",le="0.1"} 3
starrocks_txn_visibility_latency_ns_bucket{database="test",label="",path="root.output",le="1"} 9
starrocks_txn_visibility_latency_ns_bucket{database="test",label="",path="root.output",le="+Inf"} 10
starrocks_txn_visibility_latency_ns_bucket{database="other",label="a }{ b",path="root.output",le="1"} 5
starrocks_txn_visibility_latency_ns_bucket{database="other",label="a }{ b",path="root.output",le="+Inf"} 5
starrocks_txn_visibility_latency_ns_count{database="test",label="",path="root.output"} 10
`))
	g, ok := s.value("go_goroutines")
	require.True(t, ok)
	assert.Equal(t, 1088.0, g)
	_, ok = s.value("go_threads")
	assert.False(t, ok)
	b := s.buckets("starrocks_txn_visibility_latency_ns")
	assert.Equal(t, map[float64]float64{0.1: 3, 1: 14, math.Inf(1): 15}, b, "buckets summed by bound over series, a brace inside a label value included")
}

func TestFleetHistogramQuantile(t *testing.T) {
	h := histogram{}
	// Two members; the second observed 4 before its baseline.
	h.add(map[float64]float64{0.1: 50, 1: 90, 10: 100, math.Inf(1): 100}, nil)
	h.add(map[float64]float64{0.1: 54, 1: 94, 10: 104, math.Inf(1): 104}, map[float64]float64{0.1: 4, 1: 4, 10: 4, math.Inf(1): 4})
	assert.Equal(t, 200.0, h.count())
	p50, ok := h.quantile(0.5)
	require.True(t, ok)
	assert.Equal(t, 100*time.Millisecond, p50, "the 100th of 200 is the last in the first bucket")
	p99, _ := h.quantile(0.99)
	// 198th of 200: 180 up to 1 s, 20 in (1 s, 10 s]: 18/20 of the way.
	assert.InDelta(t, float64(1*time.Second+9*time.Second*18/20), float64(p99), float64(time.Millisecond))
	_, ok = histogram{}.quantile(0.99)
	assert.False(t, ok, "no observation, no quantile")
}

func TestFleetThirds(t *testing.T) {
	tr := thirds([]float64{10, 11, 9, 10, 12, 10, 30, 31, 29})
	assert.Equal(t, 10.0, tr.first)
	assert.Equal(t, 30.0, tr.last)
	assert.False(t, tr.flat(1.25, 4), "tripled")
	assert.True(t, thirds([]float64{10, 11, 9, 10, 12, 10, 11, 10, 12}).flat(1.25, 0))
	assert.False(t, thirds([]float64{1, 1}).flat(10, 10), "too few samples to say")
}

func TestFleetPicksEveryKindFirst(t *testing.T) {
	plan := fleetPlan{minLive: 2, maxLive: 4}
	for seed := uint64(0); seed < 50; seed++ {
		rng := newFleetRNG(seed)
		done := map[string]int{}
		live := 3
		for i := 0; i < 5; i++ {
			k := pickEvent(rng, plan, live, live, done)
			done[k]++
			switch k {
			case evKill, evTerm:
				live--
			case evJoin:
				live++
			}
			require.GreaterOrEqual(t, live, plan.minLive)
			require.LessOrEqual(t, live, plan.maxLive)
		}
		assert.Len(t, done, len(fleetEventKinds), "seed %d: five changes from three members are one of each kind", seed)
	}
}
