package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The jsonpaths and json_root headers: the path forms StarRocks accepts ($, $.a.b, $.a[0],
// $['a']) compiled once per load and looked up in each JSON row.

type pathElem struct {
	key   string
	index int // >= 0: array index
}

func parseJSONPaths(v string) ([]string, error) {
	var paths []string
	if err := json.Unmarshal([]byte(v), &paths); err != nil {
		return nil, fmt.Errorf("Invalid jsonpaths: %s: it must be a JSON array of strings like [\"$.id\", \"$.name\"]", v)
	}
	for _, p := range paths {
		if _, err := compilePath(p); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// compilePath parses "$", "$.a.b", "$.a[0]", "$['a']" into elements.
func compilePath(p string) ([]pathElem, error) {
	orig := p
	p = strings.TrimSpace(p)
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("Invalid json path: %s: it must start with $", orig)
	}
	p = p[1:]
	var out []pathElem
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			if end == 0 {
				return nil, fmt.Errorf("Invalid json path: %s: empty key", orig)
			}
			out = append(out, pathElem{key: p[:end], index: -1})
			p = p[end:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, fmt.Errorf("Invalid json path: %s: missing ]", orig)
			}
			inner := p[1:end]
			p = p[end+1:]
			if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] {
				out = append(out, pathElem{key: inner[1 : len(inner)-1], index: -1})
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("Invalid json path: %s: bad index [%s]", orig, inner)
			}
			out = append(out, pathElem{index: n})
		default:
			return nil, fmt.Errorf("Invalid json path: %s", orig)
		}
	}
	return out, nil
}

// lookupPath finds the value at path inside the validated value doc of kind k.
func lookupPath(doc []byte, k jkind, path []pathElem) (jkind, int, int, bool) {
	start, end := 0, len(doc)
	for _, pe := range path {
		cur := doc[start:end]
		found := false
		if pe.index < 0 {
			if k != jObject {
				return 0, 0, 0, false
			}
			it := newObjectIter(cur)
			for {
				key, kesc, vk, vs, ve, _, ok := it.next()
				if !ok {
					break
				}
				ks := string(key)
				if kesc {
					ks, _ = unquote(append(append([]byte{'"'}, key...), '"'), true)
				}
				if ks == pe.key {
					k, start, end, found = vk, start+vs, start+ve, true
					break
				}
			}
		} else {
			if k != jArray {
				return 0, 0, 0, false
			}
			it := newArrayIter(cur)
			for i := 0; ; i++ {
				vk, vs, ve, _, ok := it.next()
				if !ok {
					break
				}
				if i == pe.index {
					k, start, end, found = vk, start+vs, start+ve, true
					break
				}
			}
		}
		if !found {
			return 0, 0, 0, false
		}
	}
	return k, start, end, true
}
