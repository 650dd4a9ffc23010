package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Some failures to reach the cluster no retry can fix: the brokers refused
// the credentials (an error code, or the connection closed during the SASL
// handshake three times: client.go, ping), a plaintext client meets a TLS
// listener that says so (a TLS alert), the broker's certificate is not
// trusted, or the address is not a Kafka broker at all (an HTTP server that
// answers, a MySQL port). An input that meets one at start stops, and the
// pipeline with it, instead of retrying forever (consumer.Connect).
// Everything else is retried: an unreachable broker, a missing topic, an
// authorization the operator may still grant, and the failures that look
// like a broker in trouble — a connection closed at once (a TLS listener
// that does not answer plaintext with an alert), a TLS hello that gets no
// answer (a plaintext Kafka listener waits for the rest of what it reads as
// a request).

// DefiniteError is a failure to reach the cluster that no retry fixes.
type DefiniteError struct{ err error }

func (e *DefiniteError) Error() string { return e.err.Error() }
func (e *DefiniteError) Unwrap() error { return e.err }

// IsDefinite reports whether err is a failure no retry fixes.
func IsDefinite(err error) bool {
	var d *DefiniteError
	return errors.As(err, &d)
}

// definite returns the error a failure to reach the cluster is, when no
// retry fixes it (nil otherwise), with what to check.
func (c ClientConfig) definite(doing string, err error) error {
	brokers := c.BrokersString()
	var (
		verify    *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
	)
	msg := err.Error()
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.UnsupportedSaslMechanism), errors.Is(err, kerr.IllegalSaslState):
		return fmt.Errorf("%s: authentication to seed_brokers [%s] failed, check the sasl mechanism, username and password: %w", doing, brokers, err)
	case errors.As(err, &verify), errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid):
		return fmt.Errorf("%s: the certificate of seed_brokers [%s] is not trusted: set tls.root_cas or tls.root_cas_file to the CA that signed it, and give the brokers by the host names it names: %w", doing, brokers, err)
	case errors.As(err, &record) && c.TLSEnabled:
		// A server that answered a TLS hello with something else (a
		// Kafka broker closes the connection instead: not told apart).
		return fmt.Errorf("%s: seed_brokers [%s] do not speak TLS on that port, and tls is enabled: give the brokers' TLS listener, or set tls.enabled: false for a plaintext one: %w", doing, brokers, err)
	case strings.Contains(msg, "invalid large response size") && strings.Contains(msg, "tls alert record"):
		return fmt.Errorf("%s: seed_brokers [%s] answered with a TLS alert: the listener wants TLS; set tls.enabled: true (and tls.root_cas if its CA is private), or give the brokers' plaintext listener: %w", doing, brokers, err)
	case strings.Contains(msg, "invalid large response size") && strings.Contains(msg, "'HTTP'"):
		return fmt.Errorf("%s: seed_brokers [%s] answered as an HTTP server, not a Kafka broker: check the port (a Kafka listener is often 9092): %w", doing, brokers, err)
	case strings.Contains(msg, "invalid large response size"):
		return fmt.Errorf("%s: seed_brokers [%s] did not answer as a Kafka broker (its first reply is no Kafka response): check the addresses and ports: %w", doing, brokers, err)
	}
	return nil
}
