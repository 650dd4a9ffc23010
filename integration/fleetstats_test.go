package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fleet's figures: the members' Prometheus metrics (parsed from the
// text format), the visibility histogram summed over the members, and the
// trend of a long-lived member's heap and goroutines.

// promScrape is one /metrics answer: every series ("name{labels}") and its
// value.
type promScrape map[string]float64

// parseProm reads the Prometheus text format (comments skipped; a series
// is its name and labels as written, its value the next field).
func parseProm(b []byte) promScrape {
	s := promScrape{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		end := seriesEnd(line)
		if end <= 0 || end >= len(line) {
			continue
		}
		f := strings.Fields(line[end:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s[line[:end]] = v
	}
	return s
}

// seriesEnd is the end of the series part of a line: after the closing
// brace of its labels (quoted values may hold braces and spaces), or at the
// first space.
func seriesEnd(line string) int {
	brace := strings.IndexByte(line, '{')
	space := strings.IndexByte(line, ' ')
	if brace < 0 || (space >= 0 && space < brace) {
		return space
	}
	inQuote, escaped := false, false
	for i := brace + 1; i < len(line); i++ {
		c := line[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case c == '}' && !inQuote:
			return i + 1
		}
	}
	return -1
}

// seriesName is a series' metric name.
func seriesName(series string) string {
	if i := strings.IndexByte(series, '{'); i >= 0 {
		return series[:i]
	}
	return series
}

// labelValue is the value of label key in a series ("" when it has none).
func labelValue(series, key string) string {
	i := strings.Index(series, "{"+key+"=\"")
	if i < 0 {
		i = strings.Index(series, ","+key+"=\"")
	}
	if i < 0 {
		return ""
	}
	rest := series[i+len(key)+3:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// value sums every series of the metric name; ok is false when there is
// none.
func (s promScrape) value(name string) (float64, bool) {
	var sum float64
	ok := false
	for series, v := range s {
		if seriesName(series) == name {
			sum += v
			ok = true
		}
	}
	return sum, ok
}

// buckets sums the cumulative bucket counts of histogram name by upper
// bound (le), over its series.
func (s promScrape) buckets(name string) map[float64]float64 {
	out := map[float64]float64{}
	for series, v := range s {
		if seriesName(series) != name+"_bucket" {
			continue
		}
		le, err := strconv.ParseFloat(labelValue(series, "le"), 64)
		if err != nil {
			continue
		}
		out[le] += v
	}
	return out
}

// histogram is cumulative counts by upper bound, summed over members.
type histogram map[float64]float64

// add adds b less base (what a member observed since its baseline).
func (h histogram) add(b, base map[float64]float64) {
	for le, v := range b {
		h[le] += v - base[le]
	}
}

// count is the number of observations (the +Inf bucket).
func (h histogram) count() float64 { return h[math.Inf(1)] }

// quantile is the q-quantile the way Prometheus's histogram_quantile
// estimates it: linear within the bucket that holds it. ok is false for an
// empty histogram.
func (h histogram) quantile(q float64) (time.Duration, bool) {
	total := h.count()
	if total <= 0 {
		return 0, false
	}
	les := make([]float64, 0, len(h))
	for le := range h {
		les = append(les, le)
	}
	slices.Sort(les)
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range les {
		if h[le] >= rank {
			if math.IsInf(le, 1) {
				// Past the last finite bound: report that bound.
				return time.Duration(lower * float64(time.Second)), true
			}
			in := h[le] - below
			frac := 1.0
			if in > 0 {
				frac = (rank - below) / in
			}
			return time.Duration((lower + (le-lower)*frac) * float64(time.Second)), true
		}
		lower, below = le, h[le]
	}
	return time.Duration(lower * float64(time.Second)), true
}

// thirdsTrend compares the first and the last third of a series of samples:
// their medians.
type thirdsTrend struct {
	n           int
	first, last float64
}

func thirds(v []float64) thirdsTrend {
	n := len(v)
	if n < 3 {
		return thirdsTrend{n: n}
	}
	k := n / 3
	return thirdsTrend{n: n, first: median(v[:k]), last: median(v[n-k:])}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// flat reports whether the last third's median is within the bound of the
// first's: at most factor times it plus slack.
func (tr thirdsTrend) flat(factor, slack float64) bool {
	return tr.n >= 3 && tr.last <= tr.first*factor+slack
}

func (tr thirdsTrend) String() string {
	return fmt.Sprintf("median of the first third %.0f, of the last third %.0f (%d samples)", tr.first, tr.last, tr.n)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
