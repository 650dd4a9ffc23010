package prometheus

import "strings"

// SanitizeName turns a Benthos metric name into a valid Prometheus metric
// name (the classic rule [a-zA-Z_:][a-zA-Z0-9_:]*): every other character
// becomes '_', and a name that starts with a digit gets a leading '_'.
func SanitizeName(name string) string {
	return sanitize(name, true)
}

// SanitizeLabel turns a Benthos label key into a valid Prometheus label name
// ([a-zA-Z_][a-zA-Z0-9_]*, not starting with the reserved "__").
func SanitizeLabel(key string) string {
	s := sanitize(key, false)
	for strings.HasPrefix(s, "__") {
		s = s[1:]
	}
	return s
}

func sanitize(s string, colon bool) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	b.Grow(len(s) + 1)
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', colon && r == ':':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
