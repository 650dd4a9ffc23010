package contract_test

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// How an output reads a message: Parse once; a malformed value of a message
// that names its partition and transaction poisons that transaction; a row
// body the assembler vouches for is not validated again.
func ExampleParse() {
	var w contract.Writer // the assembler's
	body := []byte(`{"id":7,"__op":1}`)
	msg := service.NewMessage(nil)
	msg.SetBytes(body)
	w.WriteRow(msg, contract.Meta{Partition: "cdc/0", Database: "shop", Table: "orders", TxnID: "t-1",
		HasSeq: true, Seq: 1, SeqSource: "a1", HasOffset: true, SourceOffset: 40}, body, true)

	for _, m := range []*service.Message{msg, withBadSeq(msg)} {
		c := contract.Parse(m)
		switch {
		case c.Err != nil && c.Named():
			fmt.Printf("poison %s/%s: %s is malformed\n", c.Partition, c.TxnID, c.Malformed)
			continue
		case c.Err != nil:
			fmt.Println("no usable contract:", c.Err)
			continue
		}
		b, _ := m.AsBytes()
		row := bytes.TrimSpace(b)
		del := false
		if f, ok := c.Row(row); ok {
			del = f.Delete // the assembler checked the body
		} else if !json.Valid(row) {
			fmt.Println("not JSON")
			continue
		}
		fmt.Printf("seq %d of %s: load into %s.%s, delete=%v, typed=%v\n", c.Seq, c.Partition, c.Database, c.Table, del, c.Typed())
	}
	// Output:
	// seq 1 of cdc/0: load into shop.orders, delete=true, typed=true
	// poison cdc/0/t-1: starrocks_seq is malformed
}

func withBadSeq(m *service.Message) *service.Message {
	c := m.Copy()
	c.MetaSetMut(contract.KeySeq, "one")
	return c
}
