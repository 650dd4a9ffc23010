package lint

import "gopkg.in/yaml.v3"

// msgCleartextWithoutTLS is the warning of cleartextWithoutTLS.
const msgCleartextWithoutTLS = "starrocks_txn mysql_allow_cleartext_passwords is on without mysql_tls: the password of mysql_address crosses the network in clear text whenever the FE asks for it (accounts that authenticate through LDAP); enable mysql_tls"

// cleartextWithoutTLS warns about a starrocks_txn output whose MySQL
// connection may send the password in clear text (the LDAP accounts'
// mysql_clear_password plugin) without mysql_tls. It is a warning, not an
// error: on a trusted network it is the user's choice (the component's lint
// rule can only refuse, so the check lives here; the output logs the same
// warning at start).
func cleartextWithoutTLS(out *yaml.Node, warn func(*yaml.Node, string, ...any)) {
	n := mapValue(orEmpty(out), "mysql_allow_cleartext_passwords")
	if on, ok := boolOf(n, false); !ok || !on {
		return
	}
	tls := mapValue(orEmpty(out), "mysql_tls")
	if tls != nil && tls.Kind != yaml.MappingNode {
		return
	}
	if on, ok := boolOf(mapValue(orEmpty(tls), "enabled"), false); !ok || on {
		return
	}
	warn(n, msgCleartextWithoutTLS)
}
