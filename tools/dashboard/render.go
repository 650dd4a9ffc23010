package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// drawnPanel is a panel's evaluated targets.
type drawnPanel struct {
	title, unit string
	series      []*series
}

// Grafana's classic palette, so the picture reads like the dashboard.
var palette = []color.RGBA{
	{0x73, 0xbf, 0x69, 0xff}, {0xf2, 0xcc, 0x0c, 0xff}, {0x8a, 0xb8, 0xff, 0xff}, {0xff, 0x78, 0x0a, 0xff},
	{0xf2, 0x49, 0x5c, 0xff}, {0x57, 0x94, 0xf2, 0xff}, {0xb8, 0x77, 0xd9, 0xff}, {0x70, 0x5d, 0xa0, 0xff},
}

const columns = 3

func render(out, title string, panels []drawnPanel, start, end time.Time, width int) error {
	rows := (len(panels) + columns - 1) / columns
	w := vg.Length(width) * vg.Inch / 96
	h := w * vg.Length(rows) * 0.28
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)

	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, columns)
	}
	for i, p := range panels {
		pl, err := panelPlot(p, start, end)
		if err != nil {
			return fmt.Errorf("panel %q: %w", p.title, err)
		}
		plots[i/columns][i%columns] = pl
	}
	for c := len(panels) % columns; c > 0 && c < columns; c++ {
		plots[rows-1][c] = plot.New() // blank cells keep the grid
		plots[rows-1][c].HideAxes()
	}
	tiles := draw.Tiles{Rows: rows, Cols: columns, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 5,
		PadTop: vg.Millimeter * 4, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c := range plots[r] {
			if plots[r][c] != nil {
				plots[r][c].Draw(canvases[r][c])
			}
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func panelPlot(p drawnPanel, start, end time.Time) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.title
	pl.Title.TextStyle.Font.Size = vg.Points(11)
	pl.X.Label.Text = "seconds into the run"
	pl.X.Label.TextStyle.Font.Size = vg.Points(8)
	pl.X.Tick.Label.Font.Size = vg.Points(8)
	pl.Y.Tick.Label.Font.Size = vg.Points(8)
	pl.Y.Tick.Marker = unitTicks{p.unit}
	pl.Y.Min = 0
	pl.X.Min, pl.X.Max = 0, end.Sub(start).Seconds()
	pl.Add(plotter.NewGrid())
	pl.Legend.Top = true
	pl.Legend.Left = true
	pl.Legend.TextStyle.Font.Size = vg.Points(7)
	pl.Legend.ThumbnailWidth = vg.Points(10)
	maxY := 0.0
	for i, s := range p.series {
		xys := make(plotter.XYs, 0, len(s.ts))
		for j, t := range s.ts {
			v := s.vs[j]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: t.Sub(start).Seconds(), Y: v})
			maxY = math.Max(maxY, v)
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.4)
		pl.Add(l)
		if i < 6 {
			pl.Legend.Add(s.name, l)
		}
	}
	if len(p.series) == 0 || maxY == 0 {
		pl.Y.Max = 1
	} else {
		pl.Y.Max = maxY * 1.25 // room for the legend
	}
	if len(p.series) == 0 {
		pl.Title.Text += " (no data)"
	}
	return pl, nil
}

// unitTicks labels the Y axis in the panel's unit.
type unitTicks struct{ unit string }

func (u unitTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = format(ts[i].Value, u.unit)
		}
	}
	return ts
}

func format(v float64, unit string) string {
	switch unit {
	case "s":
		if v < 1 && v != 0 {
			return fmt.Sprintf("%.0f ms", v*1000)
		}
		return fmt.Sprintf("%.3g s", v)
	case "bytes", "Bps":
		suffix := ""
		if unit == "Bps" {
			suffix = "/s"
		}
		for _, u := range []struct {
			n float64
			s string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if math.Abs(v) >= u.n {
				return fmt.Sprintf("%.3g %s%s", v/u.n, u.s, suffix)
			}
		}
		return fmt.Sprintf("%.3g B%s", v, suffix)
	default:
		switch {
		case math.Abs(v) >= 1e6:
			return fmt.Sprintf("%.3gM", v/1e6)
		case math.Abs(v) >= 1e3:
			return fmt.Sprintf("%.3gk", v/1e3)
		}
		return fmt.Sprintf("%.3g", v)
	}
}
