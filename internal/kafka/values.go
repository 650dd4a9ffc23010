package kafka

import (
	"fmt"
	"strings"
	"time"

	// The lint rules use parse_duration and re_find_object, Bloblang methods
	// of the pure components.
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
)

// Value rules of the Kafka components. Each has a Go check, run when the
// component is built, and a lint rule that reports the same text, so that
// `lint` says what the start would say.

const (
	durationMsg = "%s must be a duration with a unit (e.g. 500ms, 30s, 2m), got %q"
	positiveMsg = "%s must be positive, got %q"
	byteSizeMsg = "%s must be a positive byte size such as 1048576, 512KiB, 1MiB or 2MB (at most 1GiB), got %q"
)

// DurationField reads a positive duration field; a value without a unit, or
// zero or negative, gets an error naming the field.
func DurationField(conf *service.ParsedConfig, name string) (time.Duration, error) {
	raw, err := conf.FieldString(name)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(strings.TrimSpace(raw))
	if err != nil {
		return 0, fmt.Errorf(durationMsg, name, raw)
	}
	if d <= 0 {
		return 0, fmt.Errorf(positiveMsg, name, raw)
	}
	return d, nil
}

// DurationLintRule is the lint rule of a field read with DurationField.
func DurationLintRule(name string) string {
	return DurationMaxLintRule(name, 0)
}

const durationMaxMsg = "%s must be at most %s, got %q"

// DurationMaxField reads a positive duration field of at most max.
func DurationMaxField(conf *service.ParsedConfig, name string, max time.Duration) (time.Duration, error) {
	d, err := DurationField(conf, name)
	if err != nil {
		return 0, err
	}
	if d > max {
		raw, _ := conf.FieldString(name)
		return 0, fmt.Errorf(durationMaxMsg, name, max, raw)
	}
	return d, nil
}

// DurationMaxLintRule is the lint rule of a field read with
// DurationMaxField (no bound when max is 0).
func DurationMaxLintRule(name string, max time.Duration) string {
	bound := ""
	if max > 0 {
		bound = fmt.Sprintf("\n  this.string().trim().parse_duration() > %d => [ %q.format(%q, %q, this.string()) ],", max.Nanoseconds(), durationMaxMsg, name, max.String())
	}
	return fmt.Sprintf(`root = match {
  this.string().trim().parse_duration().catch(null) == null => [ %[1]q.format(%[2]q, this.string()) ],
  this.string().trim().parse_duration() <= 0 => [ %[3]q.format(%[2]q, this.string()) ],%[4]s
}`, durationMsg, name, positiveMsg, bound)
}

// ByteSizeField reads a byte size field (ParseByteSize) with an error naming
// the field.
func ByteSizeField(conf *service.ParsedConfig, name string) (int32, error) {
	raw, err := conf.FieldString(name)
	if err != nil {
		return 0, err
	}
	n, err := ParseByteSize(raw)
	if err != nil {
		return 0, fmt.Errorf(byteSizeMsg, name, raw)
	}
	return n, nil
}

// ByteSizeLintRule is the lint rule of a field read with ByteSizeField.
func ByteSizeLintRule(name string) string {
	return fmt.Sprintf(`let parts = this.string().trim().re_find_object("^([0-9]+)\\s*(B|KB|MB|GB|KiB|MiB|GiB)?$")
let mult = match $parts.2.or("B") {
  "KiB" => 1024, "MiB" => 1048576, "GiB" => 1073741824,
  "KB" => 1000, "MB" => 1000000, "GB" => 1000000000,
  _ => 1,
}
root = if $parts.1.or("") == "" || $parts.1.number() <= 0 || $parts.1.number() * $mult > 1073741824 { [ %[1]q.format(%[2]q, this.string()) ] }`, byteSizeMsg, name)
}

// IntRangeLintRule refuses an integer field below min (and above max when
// max > min), with the text of IntRangeError.
func IntRangeLintRule(name string, min, max int) string {
	if max > min {
		return fmt.Sprintf(`root = if this < %[1]d || this > %[2]d { [ %[3]q.format(this) ] }`, min, max, fmt.Sprintf("%s must be between %d and %d, got %%v", name, min, max))
	}
	return fmt.Sprintf(`root = if this < %[1]d { [ %[2]q.format(this) ] }`, min, fmt.Sprintf("%s must be at least %d, got %%v", name, min))
}

// IntRangeError checks an integer against the IntRangeLintRule of the same
// bounds.
func IntRangeError(name string, v, min, max int) error {
	if max > min {
		if v < min || v > max {
			return fmt.Errorf("%s must be between %d and %d, got %d", name, min, max, v)
		}
		return nil
	}
	if v < min {
		return fmt.Errorf("%s must be at least %d, got %d", name, min, v)
	}
	return nil
}

// BloblangDuration returns a Bloblang expression that renders the
// nanoseconds in expr (a positive integer, e.g. from parse_duration) the way
// Go's time.Duration.String does ("1m0s", "1.5s", "250ms"), so that a lint
// rule can show a duration in the start-time error's words.
func BloblangDuration(expr string) string {
	return fmt.Sprintf(`(if %[1]s < 1000 { "%%vns".format(%[1]s) } else if %[1]s < 1000000 { "%%vµs".format(%[1]s / 1000) } else if %[1]s < 1000000000 { "%%vms".format(%[1]s / 1000000) } else if %[1]s >= 3600000000000 { "%%vh%%vm%%vs".format((%[1]s / 3600000000000).floor(), ((%[1]s %% 3600000000000) / 60000000000).floor(), (%[1]s %% 60000000000) / 1000000000) } else if %[1]s >= 60000000000 { "%%vm%%vs".format((%[1]s / 60000000000).floor(), (%[1]s %% 60000000000) / 1000000000) } else { "%%vs".format(%[1]s / 1000000000) })`, expr)
}
