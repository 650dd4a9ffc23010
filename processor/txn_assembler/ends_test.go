package txnassembler

import (
	"context"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

const customEndsConfig = `format: custom
custom:
  kind: 'root = this.k'
  txn_id: 'root = this.t'
  table: 'root = "orders"'
  database: 'root = "test"'
  row: 'root = this.r'`

var customEvents = []string{`{"k":"begin","t":"a"}`, `{"k":"data","t":"a","r":{"id":1}}`, `{"k":"END","t":"a"}`,
	`{"k":"data_end","t":"b","r":{"id":2}}`, `{"k":"abort","t":"c"}`, `{"k":"skip"}`, `not json`, `{"k":"data","t":"b","r":{"id":3}}`}

// detectorRig feeds one partition's events through a processor one at a
// time and asks the end detector it registered about each.
type detectorRig struct {
	p    *Processor
	ends registry.EndFunc
	off  int64
}

func newDetectorRig(t require.TestingT, cfg string) *detectorRig {
	conf, err := processorSpec().ParseYAML(cfg, nil)
	require.NoError(t, err)
	res := service.MockResources()
	p, err := newFromConfig(conf, res)
	require.NoError(t, err)
	ends := registry.Get(res).TxnEnds()
	require.NotNil(t, ends, "the processor registered its end detector")
	return &detectorRig{p: p, ends: ends}
}

// step processes body and returns what the detector said about it and
// whether a transaction is open in the partition afterwards.
func (r *detectorRig) step(t require.TestingT, body string) (ends, open bool) {
	msg := inputMsg("cdc", 0, r.off, "k", []byte(body))
	r.off++
	ends = r.ends(msg.Copy())
	_, err := r.p.ProcessBatch(context.Background(), service.MessageBatch{msg})
	require.NoError(t, err)
	ps := r.p.parts["cdc/0"]
	return ends, ps != nil && ps.open != nil
}

// The detector agrees with the processor's own decoder: it says "ends"
// exactly for an event the decoder reads without error as an END, a row
// that ends its transaction or an abort, on hostile and generated events of
// every format. (Which transaction it ends is the processor's business: an
// END of another transaction than the open one, two writers interleaved in
// a partition, ends nothing, and a batch cut there holds that transaction
// open until its own end, as every batch did before cuts.)
func TestEndDetectorAgreesWithTheDecoder(t *testing.T) {
	for format, events := range map[string][]string{
		formatEnvelope: append(append([]string{}, hostileEnvelopes...), `{"txnId":"t-17","type":"TXN_BEGIN"}`, `{"txnId":"t-17","type":"txn_end"}`,
			`{"txnId":"t-18","type":"DATA","database":"test","table":"orders","json":{"id":1}}`),
		formatMaxwell: append(append([]string{}, hostileMaxwell...), maxwellRow1),
		formatCustom:  customEvents,
	} {
		cfg := "format: " + format
		if format == formatCustom {
			cfg = customEndsConfig
		}
		t.Run(format, func(t *testing.T) {
			r := newDetectorRig(t, cfg)
			decode := r.p.decode
			check := func(t require.TestingT, body string) {
				msg := inputMsg("cdc", 0, 1, "k", []byte(body))
				ev, err := decode(msg.Copy())
				require.Equal(t, err == nil && endsTxn(ev.kind), r.ends(msg), "%s: %q (decoded %v, %v)", format, body, ev.kind, err)
			}
			for _, e := range events {
				check(t, e)
			}
			rapid.Check(t, func(t *rapid.T) {
				switch format {
				case formatEnvelope:
					check(t, genEnvelope(t))
				case formatMaxwell:
					check(t, genMaxwell(t))
				}
			})
		})
	}
}

// Complete: on the workload's traffic (every record part of a well-formed
// transaction) the detector finds every end, so batches are cut at each.
func TestEndDetectorFindsEveryEndOfTheWorkload(t *testing.T) {
	for _, format := range []string{formatEnvelope, formatMaxwell} {
		r := newDetectorRig(t, "format: "+format)
		ends, n := 0, 0
		for _, batch := range workloadBatches(t, format, 300, 1000) {
			for _, m := range batch {
				if p, _ := m.MetaGetMut("kafka_partition"); p.(int) != 0 {
					continue
				}
				body, _ := m.AsBytes()
				e, open := r.step(t, string(body))
				require.Equal(t, !open, e, "%s: %q: ends %v, open after it %v", format, body, e, open)
				if e {
					ends++
				}
				n++
			}
		}
		require.Equal(t, 300/4, ends, "%s: one end per transaction of the partition", format)
	}
}

// With a partition field the processor's partitions are not the input's:
// it registers no detector, and the input cuts nowhere.
func TestNoEndDetectorWithAPartitionField(t *testing.T) {
	_, res := newProc(t, "partition: '${! @kafka_key }'")
	require.Nil(t, registry.Get(res).TxnEnds())
}
