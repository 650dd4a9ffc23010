package redact

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"broker:9092":                       "broker:9092",
		"u:p@broker:9092":                   "broker:9092",
		"u@broker:9092":                     "broker:9092",
		"kafka://u:p@broker:9092":           "kafka://broker:9092",
		"kafka://broker:9092":               "kafka://broker:9092",
		"sasl+ssl://u:p%zz@broker:9092":     "sasl+ssl://broker:9092",
		"http://user:pass@host:8080/x?y=1":  "http://host:8080/x?y=1",
		"http://user:p@ss@host:8080/x":      "http://host:8080/x",
		"http://host:8080/x?mail=a@b":       "http://host:8080/x?mail=a@b",
		"https://pushgw:9091":               "https://pushgw:9091",
		"http://u:p%zz@host/a@b":            "http://host/a@b",
		"":                                  "",
		"127.0.0.1:9030":                    "127.0.0.1:9030",
		"http://[::1]:8030":                 "http://[::1]:8030",
		"http://admin:s3cret@[::1]:8030/ap": "http://[::1]:8030/ap",
	} {
		assert.Equal(t, want, URL(in), in)
	}
}

func TestAddress(t *testing.T) {
	for in, want := range map[string]string{
		"broker:9092":                      "broker:9092",
		"u:p@broker:9092":                  "broker:9092",
		"u@broker:9092":                    "broker:9092",
		"kafka://u:p@broker:9092":          "kafka://broker:9092",
		"kafka://broker:9092":              "kafka://broker:9092",
		"sasl+ssl://u:p%zz@broker:9092":    "sasl+ssl://broker:9092",
		"http://user:pass@host:8080/x?y=1": "http://host:8080/x?y=1",
		"u:p@ss@broker:9092":               "broker:9092",
	} {
		assert.Equal(t, want, Address(in), in)
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		`Put "http://u:***@127.0.0.1:1/metrics/job/x": dial tcp 127.0.0.1:1: connect: connection refused`: `Put "http://127.0.0.1:1/metrics/job/x": dial tcp 127.0.0.1:1: connect: connection refused`,
		"unexpected status code 500 while pushing to https://ops:s3cret@pg:9091/metrics/job/j: down":      "unexpected status code 500 while pushing to https://pg:9091/metrics/job/j: down",
		"two: http://a:b@x, http://c:d@y/z and mail me@example.com":                                       "two: http://x, http://y/z and mail me@example.com",
		`parse "http://u:p@h%zz": invalid URL escape "%zz"`:                                               `parse "http://h%zz": invalid URL escape "%zz"`,
		"nothing to hide at http://host:8030/api?x=1":                                                     "nothing to hide at http://host:8030/api?x=1",
	} {
		assert.Equal(t, want, Text(in), in)
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	assert.NoError(t, Error(nil))
	plain := errors.New("no url here")
	assert.Same(t, plain, Error(plain), "an error without credentials is returned as it is")

	inner := fmt.Errorf("pushing to http://u:s3cret@pg:9091: %w", fs.ErrNotExist)
	err := Error(inner)
	assert.Equal(t, "pushing to http://pg:9091: file does not exist", err.Error())
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, err, inner)
}

// net/http keeps the user name (and *** for the password) of a URL in its
// errors; Error removes both.
func TestErrorOfNetHTTP(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	_, err := http.Get("http://admin:s3cret@" + addr + "/x")
	require.Error(t, err)
	require.Contains(t, err.Error(), "admin", "net/http quotes the user name")
	clean := Error(err)
	assert.NotContains(t, clean.Error(), "admin")
	assert.NotContains(t, clean.Error(), "s3cret")
	assert.Contains(t, clean.Error(), addr)
	var ue *url.Error
	assert.True(t, errors.As(clean, &ue))
}
