// Package redact removes credentials from URLs and addresses before they are
// logged or put into an error. Every component of the project uses it: a
// user may write `http://user:secret@host` into any URL field, and libraries
// (net/http, the Prometheus push client, url.Parse) quote the URL they were
// given, userinfo included, in their own error texts.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// URL removes the userinfo of a URL or address
// (`http://user:secret@host:8030/x` → `http://host:8030/x`,
// `user:secret@host:9092` → `host:9092`). A value without userinfo comes
// back unchanged.
func URL(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if u, err := url.Parse(s); err == nil {
			if u.User == nil {
				return s
			}
			u.User = nil
			return u.String()
		}
	}
	// Not a parsable URL: drop everything of the authority up to its last
	// '@' (Go's url.Parse also takes the last one), keeping the scheme.
	start := 0
	if j := strings.Index(s, "://"); j >= 0 {
		start = j + 3
	}
	end := len(s)
	if k := strings.IndexAny(s[start:], "/?#"); k >= 0 {
		end = start + k
	}
	if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
		return s[:start] + s[start+at+1:]
	}
	return s
}

// UserinfoExpr matches an optional scheme and everything up to the last '@'
// of an address: what Address removes. A Bloblang lint rule that must give
// Address's text uses it with re_replace_all(UserinfoExpr, "$1").
const UserinfoExpr = `^([A-Za-z][A-Za-z0-9+.-]*://)?.*@`

var userinfo = regexp.MustCompile(UserinfoExpr)

// Address removes the userinfo of an address that is not a URL with a path
// (a broker's `user:secret@host:9092`, `kafka://user:secret@host:9092`),
// erring on the side of removing too much: everything up to the last '@'
// goes. For URLs, whose paths and queries may hold an '@', use URL.
func Address(s string) string {
	return userinfo.ReplaceAllString(s, "$1")
}

// inText finds the userinfo of URLs inside free text: a scheme, "://", then
// everything of the authority up to its last '@' (an authority ends at '/',
// '?', '#', white space or a quote).
var inText = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#\s"'` + "`" + `]*@`)

// Text removes the userinfo of every URL in s, e.g. an error message of a
// library that quotes the URL it was given.
func Text(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return inText.ReplaceAllString(s, "$1")
}

// Error returns err with Text applied to its message; errors.Is and
// errors.As still see the original error. nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := Text(msg)
	if clean == msg {
		return err
	}
	return &redacted{msg: clean, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
