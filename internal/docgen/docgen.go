// Package docgen renders a plugin's Markdown reference from its config spec,
// so the documentation is generated from the code it documents.
//
// Benthos v4.60.0's ConfigView.RenderDocs fails on every plugin ("can't
// evaluate field AdvancedConfig in type service.TemplateDataPlugin": its
// template names a field the data no longer has), so the page is rendered
// here from ConfigView.TemplateData.
package docgen

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	"github.com/redpanda-data/benthos/v4/public/service"
)

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"code": func(s string) string { return "`" + s + "`" },
	"trim": strings.TrimSpace,
}).Parse(`# {{.Name}}

<!-- Generated from the plugin's config spec by internal/docgen; do not edit.
     Regenerate with: UPDATE_DOCS=1 go test -run TestComponentDocs . -->

Type: {{.Type}}. Status: {{.Status}}.{{if .Version}} Since {{.Version}}.{{end}}

{{trim .Summary}}

## Common config

` + "```yaml" + `
{{trim .CommonConfigYAML}}
` + "```" + `

## All fields

` + "```yaml" + `
{{trim .AdvancedConfigYAML}}
` + "```" + `
{{if .Description}}
## Description

{{trim .Description}}
{{end}}{{if .Examples}}
## Examples
{{range .Examples}}
### {{.Title}}

{{trim .Summary}}

` + "```yaml" + `
{{trim .Config}}
` + "```" + `
{{end}}{{end}}
## Fields
{{range .Fields}}
### {{code .FullName}}

{{trim .Description}}
{{if .IsSecret}}
This field contains sensitive information. Review your cluster security before adding it to your configuration.
{{end}}{{if .IsInterpolated}}
This field supports interpolation functions.
{{end}}
*Type*: {{code .Type}}
{{if .DefaultMarshalled}}
*Default*: {{code .DefaultMarshalled}}
{{end}}{{if .AnnotatedOptions}}
| Option | Summary |
|---|---|
{{range .AnnotatedOptions}}| {{code (index . 0)}} | {{index . 1}} |
{{end}}{{else if .Options}}
Options: {{range $i, $o := .Options}}{{if $i}}, {{end}}{{code $o}}{{end}}.
{{end}}{{if .ExamplesMarshalled}}
` + "```yaml" + `
# Examples
{{range .ExamplesMarshalled}}
{{trim .}}
{{end}}` + "```" + `
{{end}}{{end}}{{if .Footnotes}}
{{trim .Footnotes}}
{{end}}`))

// Render returns the Markdown reference of one plugin.
func Render(view *service.ConfigView) ([]byte, error) {
	data, err := view.TemplateData()
	if err != nil {
		return nil, fmt.Errorf("reading the spec of a plugin: %w", err)
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("rendering the docs of %s: %w", data.Name, err)
	}
	return buf.Bytes(), nil
}
