// Package kafka is the franz-go client plumbing shared by every Kafka
// component of the project (the kafka_txn input and output, and any later
// Kafka source): the connection fields of the config spec (seed_brokers,
// client_id, tls, sasl), their parsing, the kgo options they become, the
// reachability check that turns a refused or unauthenticated connection into
// an error naming the field to fix, and the logger adapter that forwards
// franz-go's own warnings through the Benthos logger, rate-limited.
//
// Consumer- and producer-specific options stay in their components: this
// package knows how to reach a cluster, not what to do there.
package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/redact"
)

// Field names of the connection settings, the same in every Kafka component
// (and the same as in Redpanda Connect's Kafka components, so that users
// recognise them).
const (
	FieldSeedBrokers   = "seed_brokers"
	FieldClientID      = "client_id"
	FieldTLS           = "tls"
	FieldSASL          = "sasl"
	FieldSASLMechanism = "mechanism"
	FieldSASLUsername  = "username"
	FieldSASLPassword  = "password"
)

// SASL mechanisms accepted by sasl[].mechanism.
const (
	SASLNone        = "none"
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// DefaultClientID is the default of client_id.
const DefaultClientID = "benthos"

const (
	errNoSeedBrokersText = "seed_brokers must name at least one broker"
	errCredentialsText   = "seed_brokers entry %q: credentials in a broker address are not allowed; give host:port and set sasl instead"
	errSchemeText        = "seed_brokers entry %q: a broker address is host:port, without a scheme; set tls to encrypt"
)

// seedBrokersLintRule reports, with ParseSeedBrokers's texts, a list that
// names no broker and each address with credentials or a scheme. Benthos
// runs a list field's rule on the list and on each element: the list is
// checked for emptiness, an element for its addresses.
var seedBrokersLintRule = fmt.Sprintf(`root = if this.type() == "array" {
  if this.map_each(b -> b.string().split(",").map_each(s -> s.trim()).filter(s -> s != "")).flatten().length() == 0 { [ %q ] }
} else {
  this.string().split(",").map_each(s -> s.trim()).filter(s -> s.contains("@") || s.contains("://")).map_each(s -> if s.contains("@") { %q.format(s.re_replace_all(%q, "$1")) } else { %q.format(s) })
}`, errNoSeedBrokersText, errCredentialsText, redact.UserinfoExpr, errSchemeText)

// SeedBrokersField is the seed_brokers field.
func SeedBrokersField() *service.ConfigField {
	return service.NewStringListField(FieldSeedBrokers).
		Description("Addresses of Kafka brokers to connect to first. An entry may hold several comma-separated addresses.").
		Example([]string{"localhost:9092"}).
		Example([]string{"broker-1:9092", "broker-2:9092"}).
		LintRule(seedBrokersLintRule)
}

// ClientIDField is the client_id field.
func ClientIDField() *service.ConfigField {
	return service.NewStringField(FieldClientID).
		Description("The client ID sent to the brokers.").
		Default(DefaultClientID).
		Example("shop-cdc-loader")
}

// TLSField is the standard Benthos TLS block, off by default.
func TLSField() *service.ConfigField {
	return service.NewTLSToggledField(FieldTLS).
		Example(map[string]any{"enabled": true}).
		Example(map[string]any{"enabled": true, "root_cas_file": "/etc/kafka/ca.pem"})
}

// SASLField is the list of SASL mechanisms, tried in order.
func SASLField() *service.ConfigField {
	return service.NewObjectListField(FieldSASL,
		service.NewStringAnnotatedEnumField(FieldSASLMechanism, map[string]string{
			SASLNone:        "No SASL authentication.",
			SASLPlain:       "Plain text username and password.",
			SASLScramSHA256: "SCRAM with SHA-256.",
			SASLScramSHA512: "SCRAM with SHA-512.",
		}).
			Description("The SASL mechanism.").
			Example(SASLScramSHA512),
		service.NewStringField(FieldSASLUsername).
			Description("The user name.").
			Default("").
			Example("loader"),
		service.NewStringField(FieldSASLPassword).
			Description("The password.").
			Default("").
			Example("${KAFKA_PASSWORD}").
			Secret(),
	).
		Description("SASL authentication. Mechanisms are tried in order.").
		Example([]any{map[string]any{"mechanism": SASLScramSHA512, "username": "loader", "password": "${KAFKA_PASSWORD}"}}).
		Optional().
		Advanced()
}

// SASL is one configured SASL mechanism. The password is a secret: it is
// never logged and never part of an error.
type SASL struct {
	Mechanism string
	Username  string
	Password  string
}

// ClientConfig is how to reach a cluster: the parsed connection fields.
type ClientConfig struct {
	// SeedBrokers holds one host:port per entry (comma-separated entries
	// are split, blanks dropped).
	SeedBrokers []string
	ClientID    string
	TLS         *tls.Config
	TLSEnabled  bool
	// SASL lists the mechanisms to try, without the `none` entries.
	SASL []SASL
}

// ClientConfigFromParsed reads the connection fields of a component whose
// spec holds SeedBrokersField, ClientIDField, TLSField and SASLField.
func ClientConfigFromParsed(conf *service.ParsedConfig) (c ClientConfig, err error) {
	var brokers []string
	if brokers, err = conf.FieldStringList(FieldSeedBrokers); err != nil {
		return
	}
	if c.SeedBrokers, err = ParseSeedBrokers(brokers); err != nil {
		return
	}
	if c.ClientID, err = conf.FieldString(FieldClientID); err != nil {
		return
	}
	if c.TLS, c.TLSEnabled, err = conf.FieldTLSToggled(FieldTLS); err != nil {
		return
	}
	if conf.Contains(FieldSASL) {
		var list []*service.ParsedConfig
		if list, err = conf.FieldObjectList(FieldSASL); err != nil {
			return
		}
		for i, sc := range list {
			var s SASL
			if s.Mechanism, err = sc.FieldString(FieldSASLMechanism); err != nil {
				return
			}
			if s.Username, err = sc.FieldString(FieldSASLUsername); err != nil {
				return
			}
			if s.Password, err = sc.FieldString(FieldSASLPassword); err != nil {
				return
			}
			switch s.Mechanism {
			case SASLNone:
				continue
			case SASLPlain, SASLScramSHA256, SASLScramSHA512:
			default:
				err = fmt.Errorf("sasl[%d].mechanism %q is not one of %s, %s, %s, %s", i, s.Mechanism, SASLNone, SASLPlain, SASLScramSHA256, SASLScramSHA512)
				return
			}
			if s.Username == "" {
				err = fmt.Errorf("sasl[%d].username must not be empty for mechanism %s", i, s.Mechanism)
				return
			}
			c.SASL = append(c.SASL, s)
		}
	}
	return
}

// ParseSeedBrokers splits comma-separated entries, drops blanks and refuses
// an address that carries credentials or a URL scheme: franz-go would take
// `user:secret@host:9092` for a host name and print it, secret included, in
// every connection error. The refusal shows the address with the
// credentials removed.
func ParseSeedBrokers(entries []string) ([]string, error) {
	var out []string
	for _, b := range entries {
		for _, s := range strings.Split(b, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if strings.Contains(s, "@") {
				return nil, fmt.Errorf(errCredentialsText, redact.Address(s))
			}
			if strings.Contains(s, "://") {
				return nil, fmt.Errorf(errSchemeText, redact.Address(s))
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New(errNoSeedBrokersText)
	}
	return out, nil
}

// BrokersString is the seed brokers as one comma-separated string for logs
// and errors (the addresses hold no credentials: ParseSeedBrokers refuses
// them).
func (c ClientConfig) BrokersString() string {
	return strings.Join(c.SeedBrokers, ",")
}
