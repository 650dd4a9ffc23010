package prometheus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"
)

// pendingFamilies are metrics the dashboard and the alert rules already use
// while the plugin that exports them is being changed to: each stands in
// for the real family until the real pipeline declares it, and from then on
// must match it exactly (TestPendingFamiliesMatch), so the entry can simply
// be deleted.
//
// kafka_txn_committed_lag: the input's committed-lag gauge, per topic and
// partition (high watermark minus the last offset committed at a
// transaction boundary).
var pendingFamilies = []prometheus.Family{
	{Name: "kafka_txn_committed_lag", Source: "kafka_txn_committed_lag", Kind: prometheus.KindGauge, Labels: []string{"label", "partition", "path", "topic"}},
}

// withPending adds the pending families the run did not declare.
func withPending(declared []prometheus.Family) []prometheus.Family {
	have := map[string]bool{}
	for _, f := range declared {
		have[f.Name] = true
	}
	out := append([]prometheus.Family(nil), declared...)
	for _, f := range pendingFamilies {
		if !have[f.Name] {
			out = append(out, f)
		}
	}
	return out
}

// A pending family, once a plugin declares it, has the kind and labels the
// dashboard and the rules were written for.
func TestPendingFamiliesMatch(t *testing.T) {
	run := realPipeline(t)
	for _, p := range pendingFamilies {
		found := false
		for _, f := range run.declared {
			if f.Name == p.Name {
				found = true
				assert.Equal(t, p.Kind, f.Kind, "%s", p.Name)
				assert.ElementsMatch(t, p.Labels, f.Labels, "%s", p.Name)
				t.Logf("%s is exported now: delete it from pendingFamilies", p.Name)
			}
		}
		if !found {
			t.Logf("%s is not exported yet: the dashboard and alert checks use its pending declaration", p.Name)
		}
	}
}
