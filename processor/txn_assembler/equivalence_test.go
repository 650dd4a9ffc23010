package txnassembler

import (
	"context"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// newPair builds two processors of one format that differ only in the
// decoder: fast (single-pass scanner) and fallback (encoding/json only),
// with the same instance tag so that their outputs can be compared byte
// for byte.
func newPair(t *testing.T, yaml string) (fast, fallback *Processor) {
	fast, _ = newProc(t, yaml)
	fallback, _ = newProc(t, yaml)
	fallback.fast.off = true
	fallback.seqSource = fast.seqSource
	return fast, fallback
}

// TestWorkloadFastPathEqualsFallback runs the workload generator's traffic
// (the bench's and the demo's: envelope with rows as JSON strings, and the
// same transactions as maxwell rows) through both decoders and requires
// every emitted message to be the same: body, error, every metadata key and
// value, and the contract.
func TestWorkloadFastPathEqualsFallback(t *testing.T) {
	for _, format := range []string{formatEnvelope, formatMaxwell} {
		fast, fallback := newPair(t, "format: "+format)
		n := 0
		for _, batch := range workloadBatches(t, format, 600, 250) {
			want, err := fallback.ProcessBatch(context.Background(), copyBatch(batch))
			require.NoError(t, err)
			got, err := fast.ProcessBatch(context.Background(), batch)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			if len(want) == 1 {
				compareOutputs(t, want[0], got[0], format)
				n += len(got[0])
			}
		}
		require.Greater(t, n, 3000, format)
	}
}

// TestHostileTrafficFastPathEqualsFallback does the same with the hostile
// events mixed into valid transactions, so that the decisions after a
// decline (flags, attribution, replays) are the same too.
func TestHostileTrafficFastPathEqualsFallback(t *testing.T) {
	for format, hostile := range map[string][]string{formatEnvelope: hostileEnvelopes, formatMaxwell: hostileMaxwell} {
		fast, fallback := newPair(t, "format: "+format)
		var batch service.MessageBatch
		off := int64(0)
		for i, h := range hostile {
			for _, b := range []string{h, maxwellRow1, h, `{"txnId":"t-17","type":"TXN_END"}`} {
				batch = append(batch, inputMsg("cdc", int32(i%3), off, "k", []byte(b)))
				off++
			}
			if i%4 == 3 {
				// A replay of the batch so far.
				batch = append(batch, batch[len(batch)-3])
			}
		}
		want, err := fallback.ProcessBatch(context.Background(), copyBatch(batch))
		require.NoError(t, err)
		got, err := fast.ProcessBatch(context.Background(), batch)
		require.NoError(t, err)
		require.Len(t, got, 1)
		compareOutputs(t, want[0], got[0], format)
	}
}
