package docgen

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// readmeConfigHeading opens a plugin README's full configuration block.
const readmeConfigHeading = "## Configuration\n\n```yaml\n"

// ReadmeConfig returns the YAML block under a plugin README's
// "## Configuration" heading (block) and the component's config in it
// (conf): the block without its first line (`input:`, `output:`) and one
// level of indent, as a component linter takes it.
func ReadmeConfig(readme string) (conf, block string, err error) {
	start := strings.Index(readme, readmeConfigHeading)
	if start < 0 {
		return "", "", errors.New("the README has no \"## Configuration\" heading followed by a yaml block")
	}
	block = readme[start+len(readmeConfigHeading):]
	end := strings.Index(block, "```")
	if end < 0 {
		return "", "", errors.New("the README's configuration block does not end")
	}
	block = block[:end]
	body := block
	if i := strings.Index(body, "\n"); i >= 0 && !strings.HasPrefix(body, " ") {
		body = body[i+1:]
	}
	var unindented []string
	for _, l := range strings.Split(body, "\n") {
		unindented = append(unindented, strings.TrimPrefix(l, "  "))
	}
	return strings.Join(unindented, "\n"), block, nil
}

// UndocumentedFields lists the top-level fields of a plugin's spec that its
// README's field table (a "| `name` |" row) or configuration block (a
// "name:" line) lacks, each with what lacks it.
func UndocumentedFields(view *service.ConfigView, readme, block string) ([]string, error) {
	data, err := view.TemplateData()
	if err != nil {
		return nil, err
	}
	if len(data.Fields) == 0 {
		return nil, errors.New("the spec has no fields")
	}
	var missing []string
	for _, f := range data.Fields {
		if strings.Contains(f.FullName, ".") {
			continue
		}
		if !strings.Contains(readme, "| `"+f.FullName+"` |") {
			missing = append(missing, f.FullName+" (field table)")
		}
		if !strings.Contains(block, f.FullName+":") {
			missing = append(missing, f.FullName+" (config block)")
		}
	}
	return missing, nil
}

// ReadmeProblems checks a plugin README (readme, its text) against the
// plugin's spec in env (kind "input" or "output", and name): the lint
// findings of its configuration block, after edit (nil: none) adjusts the
// component's config, and the fields the README lacks (UndocumentedFields).
// An empty result is a README that documents the plugin.
func ReadmeProblems(env *service.Environment, kind, name, readme string, edit func(conf string) string) ([]string, error) {
	conf, block, err := ReadmeConfig(readme)
	if err != nil {
		return nil, err
	}
	if edit != nil {
		conf = edit(conf)
	}
	linter := env.NewComponentConfigLinter()
	var lints []service.Lint
	var view *service.ConfigView
	var ok bool
	switch kind {
	case "input":
		lints, err = linter.LintInputYAML([]byte(conf))
		view, ok = env.GetInputConfig(name)
	case "output":
		lints, err = linter.LintOutputYAML([]byte(conf))
		view, ok = env.GetOutputConfig(name)
	default:
		return nil, fmt.Errorf("plugin kind %q is not input or output", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("linting the README's configuration block: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("no %s plugin %q is registered", kind, name)
	}
	var problems []string
	for _, l := range lints {
		problems = append(problems, "lint: "+l.Error())
	}
	missing, err := UndocumentedFields(view, readme, block)
	if err != nil {
		return nil, err
	}
	for _, f := range missing {
		problems = append(problems, "the README lacks field "+f)
	}
	return problems, nil
}
