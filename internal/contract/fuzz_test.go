package contract

import (
	"strconv"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// fuzzMessage builds a message from fuzz bytes: optionally the contract
// written by a Writer (flags from the first byte), then a sequence of
// operations on metadata keys, each a key, a value type and a payload.
func fuzzMessage(data []byte) *service.Message {
	msg := service.NewMessage([]byte(`{"id":1}`))
	if len(data) == 0 {
		return msg
	}
	mode := data[0]
	data = data[1:]
	if mode&1 != 0 {
		var w Writer
		m := Meta{Partition: "cdc/1", TxnID: "t-1", SeqSource: "a1", HasSeq: mode&2 != 0, Seq: int64(mode) * 1000,
			HasOffset: mode&4 != 0, SourceOffset: int64(mode) - 100, TxnEnd: mode&8 != 0, Marker: mode&16 != 0,
			TxnAbort: mode&32 != 0, HasEpoch: mode&64 != 0, Epoch: uint64(mode)}
		if mode&128 != 0 {
			w.WriteRow(msg, m, []byte(`{"id":1,"__op":0}`), false)
		} else {
			w.Write(msg, m)
		}
	}
	for len(data) >= 3 {
		key := allKeys[int(data[0])%len(allKeys)]
		typ, n := data[1]%8, int(data[2])
		data = data[3:]
		n = min(n, len(data))
		payload := string(data[:n])
		data = data[n:]
		switch typ {
		case 0:
			msg.MetaSetMut(key, nil)
		case 1:
			msg.MetaSetMut(key, payload != "")
		case 2:
			v, _ := strconv.ParseInt(payload, 10, 64)
			msg.MetaSetMut(key, v)
		case 3:
			v, _ := strconv.ParseFloat(payload, 64)
			msg.MetaSetMut(key, v)
		case 4:
			msg.MetaSetMut(key, payload)
		case 5:
			v, _ := strconv.ParseUint(payload, 10, 64)
			msg.MetaSetMut(key, v)
		case 6:
			v, _ := strconv.Atoi(payload)
			msg.MetaSetMut(key, v)
		default:
			msg.MetaDelete(key)
		}
	}
	return msg
}

// FuzzParse checks, on arbitrary metadata (with or without a written
// contract, changed afterwards), that Parse's typed path never disagrees
// with the string keys, that Read is unchanged and that the present and
// malformed sets are exact. Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {0}, {1}, {0xff}, {0x7f},
		append([]byte{3}, "\x08\x04\x05seven"...),
		append([]byte{0xff}, "\x05\x04\x03yes"...),
		append([]byte{0}, "\x08\x03\x031.5\x09\x02\x02-1\x0a\x04\x02-1"...),
		append([]byte{0x43}, "\x0b\x04\x04junk"...),
		append([]byte{0xc7}, "\x00\x04\x01x\x07\x07\x00"...),
		append([]byte{0}, "\x0a\x05\x1318446744073709551615"...),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, fuzzMessage(data))
	})
}
