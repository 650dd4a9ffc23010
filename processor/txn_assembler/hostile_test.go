package txnassembler

// hostileEnvelopes exercise each decision of the envelope fast path and
// each of its fallbacks.
var hostileEnvelopes = []string{
	`{"partition":3,"txnId":"t-17","type":"TXN_BEGIN"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"order_id\":1}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":{"order_id":1,"x":[1,{"b":2}]}}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"__op\":1,\"order_id\":1}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"order_id\":1,\"__op\":1}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"__op\":1,\"order_id\":1}","op":"insert"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"__op\":0,\"order_id\":1}","op":1}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"__op\":\"1\",\"order_id\":1}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"__op\":2}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":{\"__op\":1}}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"s\":\"\\\"__op\"}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"  {\"a\":1}  "}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{ \"a\" : 1 }"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{ }"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"[1]"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":1"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":\"\\u00e9\\ud83d\\ude00\"}"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":1}","op":"DELETE"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":1}","op":"d"}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":1}","op":1.0}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":1}","op":""}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":1}","op":true}`,
	`{"partition":3,"txnId":"t-17","type":"DATA","database":"test","table":"orders","json":"{\"a\":1}","op":null}`,
	`{"partition":3,"txnId":"t-17","type":"data","database":"test","table":"orders","json":{"a":1}}`,
	`{"partition":3,"txnId":"t-17","type":"Txn_End"}`,
	`{"partition":3,"txnId":"t-17","type":"txn_begın"}`,
	`{"partition":3,"txnId":"t-17","type":"D\u0041TA","database":"test","table":"orders","json":{"a":1}}`,
	`{"partition":3,"txnId":"t-17","type":"COMMIT"}`,
	`{"partition":3,"txnId":"t-17","type":""}`,
	`{"partition":3,"txnId":"t-17","type":7}`,
	`{"partition":3,"txnId":"t-17"}`,
	`{"partition":3,"txnId":"","type":"TXN_END"}`,
	`{"partition":3,"txnId":17,"type":"TXN_END"}`,
	`{"partition":3,"txnId":-1.5e3,"type":"TXN_END"}`,
	`{"partition":3,"txnId":true,"type":"TXN_END"}`,
	`{"partition":3,"txnId":null,"type":"TXN_END"}`,
	`{"partition":"3","txnId":"t","type":"TXN_END"}`,
	`{"partition":"","txnId":"t","type":"TXN_END"}`,
	`{"partition":true,"txnId":"t","type":"TXN_END"}`,
	`{"partition":[3],"txnId":"t","type":"TXN_END"}`,
	`{"txnId":"t","type":"TXN_END","TYPE":"DATA"}`,
	`{"txnId":"t","type":"TXN_END","type":"TXN_BEGIN"}`,
	`{"txnId":"t","t\u0079pe":"TXN_END"}`,
	`{"txnid":"t","type":"TXN_END"}`,
	`{"txnId":"t","type":"DATA","database":7,"table":"orders","json":{}}`,
	`{"txnId":"t","type":"DATA","database":"test","table":null,"json":{}}`,
	`{"txnId":"t","type":"DATA","database":"test","table":"orders"}`,
	`{"txnId":"t","type":"DATA","database":"test","table":"orders","json":null}`,
	`{"txnId":"t","type":"DATA","database":"test","table":"orders","json":3}`,
	`{"txnId":"t","type":"DATA","database":"te\"st","table":"ord\u00e9rs","json":{}}`,
	"{\"txnId\":\"t\\u00e9\",\"type\":\"DATA\",\"database\":\"\xff\",\"table\":\"o\",\"json\":{}}",
	` {"txnId":"t","type":"TXN_END"} `, "\t{\"txnId\":\"t\",\"type\":\"TXN_END\"}\n", "\u00a0{\"txnId\":\"t\",\"type\":\"TXN_END\"}",
	`{"txnId":"t","type":"TXN_END"}x`, `{"txnId":"t","type":"TXN_END"`, `[]`, `"x"`, ``, `null`,
}

var hostileMaxwell = []string{
	maxwellRow1, maxwellRow2,
	`{"database":"shop","table":"orders","type":"delete","xid":5,"commit":true,"data":{"id":1,"__op":0}}`,
	`{"database":"shop","table":"orders","type":"delete","xid":5,"data":{"__op":0,"id":1}}`,
	`{"database":"shop","table":"orders","type":"update","xid":5,"data":{"id":1},"old":{"id":0}}`,
	`{"database":"shop","table":"orders","type":"bootstrap-insert","data":{"id":1}}`,
	`{"database":"shop","table":"orders","type":"bootstrap-insert","xid":9,"commit":true,"data":{"id":1}}`,
	`{"database":"shop","table":"orders","type":"bootstrap-start","data":{}}`,
	`{"database":"shop","type":"table-create","def":{"x":1}}`,
	`{"database":"shop","type":"database-drop","sql":"DROP DATABASE shop"}`,
	`{"database":"shop","table":"t","type":"insert","xid":5,"sql":null,"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"weird","xid":5,"sql":null,"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"weird","xid":5,"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"INSERT","xid":5,"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"ins\u0065rt","xid":5,"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"insert","data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"insert","xid":"x-5","data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"insert","xid":"","data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"insert","xid":[5],"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"insert","xid":5,"commit":"true","data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"insert","xid":5,"commit":false,"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"insert","xid":5,"commit":null,"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":"insert","xid":5,"data":"{\"id\":1}"}`,
	`{"database":"shop","table":"t","type":"insert","xid":5,"data":null}`,
	`{"database":"shop","table":"t","type":"insert","xid":5}`,
	`{"database":"shop","table":"t","type":"insert","xid":5,"data":{"id":1},"Data":{"id":2}}`,
	`{"database":"shop","table":"t","type":"insert","xid":5,"data":{"id":1},"data":{"id":2}}`,
	`{"database":1,"table":"t","type":"insert","xid":5,"data":{"id":1}}`,
	`{"table":"t","type":"insert","xid":5,"data":{"id":1}}`,
	`{"database":"shop","table":"t","type":5,"xid":5,"data":{"id":1}}`,
	`{"database":"shop","table":"t","xid":5,"data":{"id":1}}`,
}

// keyedEnvelopes and keyedMaxwell are rows whose keys are hashed on each
// path of the fast decoders (an object, a string, canonical with __op,
// decoded again): written twice, escaped, non-ASCII, __op among them. They
// are fuzz seeds and TestKeysHashOfRows's inputs; not part of the golden
// traffic, whose digest predates the hash.
var keyedEnvelopes = []string{
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":{"a":1,"b":{"c":2}}}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":{"a":1,"a":2}}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":{"a":1,"a":2,"__op":1}}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":"{\"a\":1,\"a\":2,\"__op\":1}"}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":"{\"a\":1,\"a\":2}"}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":{"\u0061":1,"é":2}}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":"{\"\\u0061\":1,\"é\":2}"}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":"{\"__op\":1,\"a\":1,\"é\":2}"}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":{"\u005f_op":1,"a":1},"op":"d"}`,
	`{"txnId":"t","type":"DATA","database":"d","table":"t","json":"{\"` + "\xff" + `\":1}"}`,
}

var keyedMaxwell = []string{
	`{"database":"d","table":"t","type":"insert","xid":1,"data":{"a":1,"a":2}}`,
	`{"database":"d","table":"t","type":"insert","xid":1,"data":{"a":1,"a":2,"__op":0}}`,
	`{"database":"d","table":"t","type":"delete","xid":1,"data":{"__op":0,"a":1}}`,
	`{"database":"d","table":"t","type":"insert","xid":1,"data":{"\u0061":1,"é":{"x":1}}}`,
	`{"database":"d","table":"t","type":"bootstrap-insert","data":{"b":1,"a":2}}`,
}

// ddlMaxwell are maxwell DDL events: schema changes first (decoded by
// encoding/json's decoder only), then those the processor skips.
var ddlMaxwell = []string{
	maxwellCreate, maxwellAlter,
	`{"type":"table-create","database":"shop","table":"t","def":{"columns":[{"type":"decimal","name":"d"}]},"sql":"CREATE TABLE t LIKE u"}`,
	`{"type":"database-create","database":"new_db","sql":"CREATE DATABASE new_db"}`,
	`{"type":"table-drop","database":"shop","table":"orders","sql":"DROP TABLE orders"}`,
	`{"type":"database-drop","database":7,"table":[],"sql":"DROP DATABASE x"}`,
	`{"type":"table-truncate","database":"shop","table":"t","xid":5}`,
}

// schemaEnvelopes are envelope SCHEMA events, good and bad; the fast path
// leaves them all to encoding/json's decoder.
var schemaEnvelopes = []string{
	`{"txnId":"t","type":"SCHEMA","database":"d","table":"t","json":{"columns":[{"name":"id","type":"BIGINT"}],"primary_key":["id"]}}`,
	`{"txnId":"t","type":"schema","database":"d","table":"t","json":"{\"columns\":[{\"name\":\"a\",\"type\":\"varchar(3)\",\"nullable\":true}]}"}`,
	`{"txnId":"t","type":"SCHEMA","database":"d","table":"t","json":{"columns":[]}}`,
	`{"txnId":"t","type":"SCHEMA","database":"d","table":"t","json":{"columns":[{"name":"a","type":"INT"}],"extra":1}}`,
	`{"txnId":"t","type":"SCHEMA","database":"d","json":{"columns":[{"name":"a","type":"INT"}]}}`,
	`{"txnId":"t","type":"SCHEMA","database":"d","table":"t"}`,
	`{"type":"SCHEMA","database":"d","table":"t","json":{"columns":[{"name":"a","type":"INT"}]}}`,
}
