package lint

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mysql_allow_cleartext_passwords without mysql_tls is a warning at its
// line; with mysql_tls enabled, off, or interpolated, nothing.
func TestCleartextPasswordsWithoutTLSWarns(t *testing.T) {
	const head = "input:\n  stdin: {}\noutput:\n  starrocks_txn:\n    load_urls: [ http://fe:8030 ]\n    mysql_address: fe:9030\n"
	for _, tc := range []struct {
		name, conf string
		warns      bool
	}{
		{"on without TLS", head + "    mysql_allow_cleartext_passwords: true\n", true},
		{"on with TLS disabled", head + "    mysql_allow_cleartext_passwords: true\n    mysql_tls: { enabled: false }\n", true},
		{"on with TLS", head + "    mysql_allow_cleartext_passwords: true\n    mysql_tls: { enabled: true }\n", false},
		{"off", head + "    mysql_allow_cleartext_passwords: false\n", false},
		{"absent", head, false},
		{"interpolated", head + "    mysql_allow_cleartext_passwords: ${CLEARTEXT}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := CheckCycleYAML([]byte(tc.conf))
			require.NoError(t, err)
			if !tc.warns {
				assert.Empty(t, ps)
				return
			}
			require.Len(t, ps, 1)
			assert.Equal(t, 7, ps[0].Line)
			assert.Equal(t, "warning: "+msgCleartextWithoutTLS, ps[0].What)
		})
	}
}
