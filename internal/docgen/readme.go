package docgen

import (
	"errors"
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
