// Package specfields defines config fields the plugins share with Benthos's
// own: the TLS block and the batching policy. They have Benthos's names,
// types, defaults and meaning, so service.ParsedConfig.FieldTLSToggled and
// FieldBatchPolicy read them unchanged, and they add what Benthos's helpers
// (service.NewTLSToggledField, service.NewBatchPolicyField) leave out: an
// example for every field, so a generated reference shows a value for each.
// A test holds them to Benthos's shape.
package specfields

import "github.com/redpanda-data/benthos/v4/public/service"

// TLS is a `tls` block as service.NewTLSToggledField defines it.
func TLS(name string) *service.ConfigField {
	return service.NewObjectField(name,
		service.NewBoolField("enabled").
			Description("Use TLS with the settings below; when false the connection is plain.").
			Example(true).
			Default(false),
		service.NewBoolField("skip_cert_verify").
			Description("Accept any server certificate. For tests only: it gives up the server's authentication.").
			Example(true).
			Default(false),
		service.NewBoolField("enable_renegotiation").
			Description("Let the server ask for renegotiation again and again (needed for servers that fail with `local error: tls: no renegotiation`).").
			Example(true).
			Default(false).
			Advanced(),
		service.NewStringField("root_cas").
			Description("Certificate authorities to trust instead of the system's, in PEM (the chain from the root to any intermediates).").
			Example("-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----").
			Default("").
			Secret(),
		service.NewStringField("root_cas_file").
			Description("A PEM file of certificate authorities to trust instead of the system's. A relative path is taken from the directory the binary runs in.").
			Example("./root_cas.pem").
			Default(""),
		service.NewObjectListField("client_certs",
			service.NewStringField("cert").
				Description("A client certificate in PEM.").
				Example("-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----").
				Default(""),
			service.NewStringField("key").
				Description("The client certificate's private key in PEM.").
				Example("${TLS_CLIENT_KEY}").
				Default("").
				Secret(),
			service.NewStringField("cert_file").
				Description("A PEM file holding a client certificate.").
				Example("./client.pem").
				Default(""),
			service.NewStringField("key_file").
				Description("A PEM file holding the client certificate's private key.").
				Example("./client.key").
				Default(""),
			service.NewStringField("password").
				Description("The password of an encrypted private key (PKCS#1 or PKCS#8; PKCS#8's obsolete pbeWithMD5AndDES-CBC is not supported).").
				Example("${TLS_KEY_PASSWORD}").
				Default("").
				Secret(),
		).
			Description("Client certificates to present: for each, either `cert` and `key` or `cert_file` and `key_file`.").
			Example([]any{map[string]any{"cert_file": "./client.pem", "key_file": "./client.key"}}).
			Default([]any{}),
	).
		Description("Custom TLS settings for the connections to the server.").
		Example(map[string]any{"enabled": true, "root_cas_file": "./root_cas.pem"}).
		Advanced()
}

// Batching is a `batching` policy as service.NewBatchPolicyField defines it.
func Batching(name string) *service.ConfigField {
	return service.NewObjectField(name,
		service.NewIntField("count").
			Description("Flush a batch once it holds this many messages. 0: no count limit.").
			Example(1000).
			Default(0),
		service.NewIntField("byte_size").
			Description("Flush a batch once its messages hold this many bytes. 0: no size limit.").
			Example(1048576).
			Default(0),
		service.NewStringField("period").
			Description("Flush a batch that has waited this long, whatever its size.").
			Example("50ms").
			Example("1s").
			Default(""),
		service.NewBloblangField("check").
			Description("A Bloblang query; a message for which it is true ends its batch.").
			Example(`this.type == "TXN_END"`).
			Default(""),
		service.NewProcessorListField("processors").
			Description("Processors run on each batch as it is flushed; whatever they return is flushed as one batch.").
			Example([]any{map[string]any{"archive": map[string]any{"format": "lines"}}}).
			Optional().
			Advanced(),
	).
		Description("A batching policy: a batch is flushed when any of its conditions is met.").
		Example(map[string]any{"count": 1000, "period": "50ms"})
}
