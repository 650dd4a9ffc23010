package jsonscan_test

import (
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/internal/jsonscan"
)

// A Debezium change event, decoded the way a format's fast path does it:
// declare the members once, scan the event, then scan the nested objects it
// needs with their own Fields. Anything but OK means: decode this event with
// encoding/json instead.
func ExampleFields_Scan() {
	var (
		event       = jsonscan.NewFields("after", "before", "op", "source", "transaction")
		source      = jsonscan.NewFields("db", "table")
		transaction = jsonscan.NewFields("id", "total_order")
	)
	body := []byte(`{"before":null,"after":{"id":1001,"customer_id":42},
	  "source":{"version":"2.7.0.Final","connector":"mysql","db":"shop","table":"orders","row":0},
	  "op":"c","ts_ms":1486500577125,
	  "transaction":{"id":"0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10","total_order":1,"data_collection_order":1}}`)

	v := make([]jsonscan.Value, event.Len())
	if event.Scan(body, v) != jsonscan.OK {
		fmt.Println("fall back to encoding/json")
		return
	}
	src := make([]jsonscan.Value, source.Len())
	txn := make([]jsonscan.Value, transaction.Len())
	if v[3].Kind != jsonscan.KindObject || source.Scan(v[3].Raw, src) != jsonscan.OK ||
		v[4].Kind != jsonscan.KindObject || transaction.Scan(v[4].Raw, txn) != jsonscan.OK {
		fmt.Println("fall back to encoding/json")
		return
	}
	fmt.Println("op:", v[2].String(), "before absent:", v[1].Absent())
	fmt.Println("table:", src[0].String()+"."+src[1].String())
	fmt.Println("txn:", txn[0].String(), "order:", string(txn[1].Raw))
	fmt.Println("row:", string(v[0].Raw))
	// Output:
	// op: c before absent: true
	// table: shop.orders
	// txn: 0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10 order: 1
	// row: {"id":1001,"customer_id":42}
}
