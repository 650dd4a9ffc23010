// Package version tells which build of the binary is running: this
// project's version and the Benthos it is built on. The project's version is
// the main module's (set when the binary is built with `go install
// module@version`), else Fallback with the VCS revision the Go toolchain
// stamps into builds from a checkout.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Fallback is the version of a build that carries no module version.
const Fallback = "0.1.0-dev"

// Name is the project's name, which --version prints whatever the binary
// file is called (go build -o, a renamed copy).
const Name = "benthos-starrocks"

const benthosModule = "github.com/redpanda-data/benthos/v4"

// benthosFallback is the Benthos version of go.mod, for builds without
// dependency info (test binaries); a test keeps it equal to go.mod.
const benthosFallback = "v4.60.0"

// Project returns this project's version.
func Project() string {
	info, _ := debug.ReadBuildInfo()
	return project(info)
}

// Benthos returns the version of the Benthos module built in.
func Benthos() string {
	info, _ := debug.ReadBuildInfo()
	return benthos(info)
}

func project(info *debug.BuildInfo) string {
	if info == nil {
		return Fallback
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return Fallback
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := Fallback + "+" + rev
	if modified == "true" {
		v += ".dirty"
	}
	return v
}

func benthos(info *debug.BuildInfo) string {
	if info == nil || len(info.Deps) == 0 {
		return benthosFallback
	}
	for _, d := range info.Deps {
		if d.Path != benthosModule {
			continue
		}
		if d.Replace != nil && d.Replace.Version != "" {
			return d.Replace.Version + " (replacing " + d.Version + ")"
		}
		return d.Version
	}
	return "unknown"
}

// Print writes the line `--version` prints: the project's name and
// version, then the Benthos it is built on and the Go toolchain, e.g.
// `benthos-starrocks 0.1.0-dev (Benthos v4.60.0, go1.26.8 linux/amd64)`.
func Print(w io.Writer) {
	fmt.Fprintf(w, "%s %s (Benthos %s, %s %s/%s)\n", Name, Project(), Benthos(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// rootValueFlags are Benthos's root flags that take a value.
var rootValueFlags = map[string]bool{
	"c": true, "config": true, "log.level": true, "s": true, "set": true, "r": true, "resources": true,
	"e": true, "env-file": true, "t": true, "templates": true,
}

// Requested reports whether a command line (without the program name) asks
// for the version: -v or --version among the root flags, before any
// subcommand, as Benthos reads them.
func Requested(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			return false // a subcommand: its flags are its own
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "v" || name == "version":
			return !hasValue || value == "true"
		case rootValueFlags[name] && !hasValue:
			i++ // the flag's value
		}
	}
	return false
}
