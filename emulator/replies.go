package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// The JSON replies, with their keys in StarRocks's order: the FE's TransactionResult, the
// BE's transaction replies, the REST results of the FE's other actions.

// kv is one entry of an ordered JSON object.
type kv struct {
	k string
	v any
}

// reply is an ordered JSON object.
type reply []kv

func (r reply) with(k string, v any) reply { return append(r, kv{k, v}) }

// withStatus replaces the Status entry (when status is not empty).
func (r reply) withStatus(status string) reply {
	if status == "" {
		return r
	}
	out := append(reply(nil), r...)
	for i := range out {
		if out[i].k == "Status" {
			out[i].v = status
		}
	}
	return out
}

func (r reply) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalPlain is json.Marshal without the HTML escapes (<, >, &), which
// the BE's JSON writer does not make.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// pretty renders r the way the BE's rapidjson PrettyWriter does: one
// member a line, indented by four spaces, ": " after each key, and no
// newline after the closing brace.
func (r reply) pretty() ([]byte, error) {
	if len(r) == 0 {
		return []byte("{}"), nil
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, e := range r {
		if i > 0 {
			b.WriteString(",\n")
		}
		k, err := marshalPlain(e.k)
		if err != nil {
			return nil, fmt.Errorf("encoding the key %q: %w", e.k, err)
		}
		v, err := marshalPlain(e.v)
		if err != nil {
			return nil, fmt.Errorf("encoding the value of %q: %w", e.k, err)
		}
		b.WriteString("    ")
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
	}
	b.WriteString("\n}")
	return b.Bytes(), nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var b []byte
	var err error
	if r, ok := v.(reply); ok && onBE(w) {
		b, err = r.pretty()
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"status":"FAILED","msg":"encoding the reply failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// txnResult is an FE TransactionResult: Status and Message first.
func txnResult(status, msg string) reply {
	return reply{{"Status", status}, {"Message", msg}}
}

// feFailed is a FAILED TransactionResult for an exception thrown in the FE:
// the FE action prints the exception's class before its message (the class
// depends on the version, srVersion.exceptionPrefix).
func (e *Emulator) feFailed(msg string) reply {
	return txnResult("FAILED", e.ver.exceptionPrefix()+msg)
}

// beReply is a BE transaction reply: Status, then ExistingJobStatus (label
// exists) or Label (in processing), then Message.
func beReply(status, msg, label string) reply {
	r := reply{{"Status", status}}
	switch status {
	case "LABEL_ALREADY_EXISTS":
		r = r.with("ExistingJobStatus", "")
	case "TXN_IN_PROCESSING":
		r = r.with("Label", label)
	}
	return r.with("Message", msg)
}

// restResult is an FE RestBaseResult.
func restResult(ok bool, msg string) reply {
	if ok {
		return reply{{"status", "OK"}, {"code", "0"}, {"msg", "Success"}, {"message", "OK"}}
	}
	return reply{{"status", "FAILED"}, {"code", "1"}, {"msg", msg}, {"message", msg}}
}
