package txnassembler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// goldenOutputs are the SHA-256 digests of everything the processor emitted
// for the golden traffic (renderOutputs), as produced by the processor
// before its single-pass decoders and its typed contract existed. The
// processor must keep producing exactly this: the same bodies, errors and
// metadata keys and values, the typed value under starrocks_contract
// excepted. Print the current digests with TXN_ASSEMBLER_PRINT_GOLDEN=1; a
// change of the digest is a change of the processor's output (or of the
// workload generator) and must be explained, not just re-recorded.
//
// Changes: maxwell's digest changed when table-create and table-alter
// events became schema changes (ARCHITECTURE.md §14.1): the hostile event
// {"database":"shop","type":"table-create","def":{"x":1}}, dropped before,
// is now flagged (its def lists no columns and names no table) under the
// transaction open around it, twice; every other message is the same but
// for its seq. The envelope's digest changed when the SCHEMA event came:
// the error of an unknown or missing type lists it among the types
// expected ("expected TXN_BEGIN, DATA, SCHEMA or TXN_END"); nothing else
// changed.
var goldenOutputs = map[string]string{
	formatEnvelope: "9f7e477277c8be81fe72502f2bb6b42dedc148fe9d0af40a01a3dbd9c3077964",
	formatMaxwell:  "d86263092701f7d59954bcf267e4e22fbbd58f899a9ca33e47a87a74585fcf87",
}

// goldenTraffic is the workload generator's traffic for format, then the
// hostile events mixed into transactions, with a replay.
func goldenTraffic(t *testing.T, format string) []service.MessageBatch {
	batches := workloadBatches(t, format, 800, 250)
	hostile := hostileEnvelopes
	if format == formatMaxwell {
		hostile = hostileMaxwell
	}
	var batch service.MessageBatch
	off := int64(1 << 20)
	for i, h := range hostile {
		for _, b := range []string{h, maxwellRow1, h, `{"txnId":"t-17","type":"TXN_END"}`} {
			batch = append(batch, inputMsg("cdc", int32(i%3), off, "k", []byte(b)))
			off++
		}
		if i%4 == 3 {
			batch = append(batch, batch[len(batch)-3])
		}
	}
	return append(batches, batch)
}

// renderOutputs renders every emitted message: body, error and every
// metadata key with its type and text, keys sorted, with the typed keys of
// the contract materialized as strings (they were strings before the typed
// value carried them).
func renderOutputs(t *testing.T, p *Processor, batches []service.MessageBatch) string {
	var sb strings.Builder
	for _, batch := range batches {
		out, err := p.ProcessBatch(context.Background(), batch)
		require.NoError(t, err)
		for _, b := range out {
			for _, msg := range b {
				msg = contract.Materialized(msg)
				body, err := msg.AsBytes()
				require.NoError(t, err)
				var keys []string
				_ = msg.MetaWalkMut(func(k string, v any) error {
					if k != "starrocks_contract" {
						s, _ := msg.MetaGet(k)
						keys = append(keys, fmt.Sprintf("%s=%T:%s", k, v, s))
					}
					return nil
				})
				sort.Strings(keys)
				e := ""
				if msg.GetError() != nil {
					e = msg.GetError().Error()
				}
				fmt.Fprintf(&sb, "%q %q %q\n", body, e, keys)
			}
		}
	}
	return sb.String()
}

func TestOutputUnchangedOnGoldenTraffic(t *testing.T) {
	for _, format := range []string{formatEnvelope, formatMaxwell} {
		p, _ := newProc(t, "format: "+format)
		p.seqSource = "golden"
		sum := sha256.Sum256([]byte(renderOutputs(t, p, goldenTraffic(t, format))))
		got := hex.EncodeToString(sum[:])
		if os.Getenv("TXN_ASSEMBLER_PRINT_GOLDEN") != "" {
			t.Logf("%s: %s", format, got)
			continue
		}
		require.Equal(t, goldenOutputs[format], got, "%s: the processor's output changed", format)
	}
}
