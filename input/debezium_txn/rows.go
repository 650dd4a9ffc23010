// This file renders a row image to load: the cached schema plans and the
// conversion of each value through them.

package debezium_txn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/internal/jsonscan"
)

func (d *decoder) plan(schema json.RawMessage) (*rowPlan, error) {
	if p, ok := d.plans[string(schema)]; ok {
		return p, nil
	}
	p, err := planFromEnvelopeSchema(schema)
	if err != nil {
		return nil, err
	}
	if len(d.plans) >= maxPlans {
		clear(d.plans)
	}
	d.plans[string(schema)] = p
	return p, nil
}

// row renders the row image to load: values converted by the plan, and
// `"__op": 1` first for a delete.
func (d *decoder) row(img json.RawMessage, plan *rowPlan, del bool) ([]byte, error) {
	img = bytes.TrimSpace(img)
	if len(img) == 0 || string(img) == "null" {
		return nil, errors.New("the row image is missing (null)")
	}
	if img[0] != '{' {
		return nil, fmt.Errorf("the row image is not a JSON object: %s", clip(img))
	}
	if plan == nil || len(plan.convs) == 0 {
		if !del {
			return append([]byte(nil), img...), nil
		}
		out := make([]byte, 0, len(img)+10)
		out = append(out, `{"__op":1`...)
		rest := bytes.TrimSpace(img[1:])
		if len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, rest...), nil
	}
	return d.convertObject(img, plan, del)
}

// convertObject rewrites the members of a JSON object in their order,
// converting those the plan names. img is valid JSON (the envelope it came
// from was validated), so its members are found by skipping, not decoded;
// a key is re-encoded as encoding/json encodes the decoded name only when
// it is not plain (convertObjectSlow is the reference, FuzzDecodeFastEqualsSlow
// holds them equal).
func (d *decoder) convertObject(img []byte, plan *rowPlan, del bool) ([]byte, error) {
	if d.slowOnly {
		return d.convertObjectSlow(img, plan, del)
	}
	out := make([]byte, 0, len(img)+32)
	out = append(out, '{')
	if del {
		out = append(out, `"__op":1`...)
	}
	first := !del
	var err error
	for i := 1; ; {
		key, raw, next, ok := nextMember(img, i)
		if !ok {
			if j := skipSpace(img, next); j != len(img)-1 || img[j] != '}' {
				// Not what a valid object looks like here: decided by
				// encoding/json.
				return d.convertObjectSlow(img, plan, del)
			}
			break
		}
		i = next
		if !first {
			out = append(out, ',')
		}
		first = false
		content := key[1 : len(key)-1]
		var c fieldConv
		var conv bool
		if plainKey(content) {
			out = append(out, key...)
			c, conv = plan.convs[string(content)]
		} else {
			name := string(jsonscan.AppendUnquoted(nil, key))
			kb, _ := json.Marshal(name)
			out = append(out, kb...)
			c, conv = plan.convs[name]
		}
		out = append(out, ':')
		if conv {
			if out, err = d.w.convert(out, c, raw); err != nil {
				return nil, fmt.Errorf("field %q: %w", jsonscan.AppendUnquoted(nil, key), err)
			}
			continue
		}
		out = append(out, raw...)
	}
	return append(out, '}'), nil
}

// convertObjectSlow is convertObject on encoding/json's tokens.
func (d *decoder) convertObjectSlow(img []byte, plan *rowPlan, del bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(img))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(img)+32)
	out = append(out, '{')
	if del {
		out = append(out, `"__op":1`...)
	}
	first := !del
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected %v in the row image", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		kb, _ := json.Marshal(key)
		out = append(out, kb...)
		out = append(out, ':')
		if c, ok := plan.convs[key]; ok {
			if out, err = d.w.convert(out, c, raw); err != nil {
				return nil, fmt.Errorf("field %q: %w", key, err)
			}
			continue
		}
		out = append(out, raw...)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}
