package starrocks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// StarRocks names the rows it rejected only in an error log: a commit that
// fails for filtered rows says "abnormal data more than max filter rate,
// tracking_url: <BE _load_error_log URL>" (docs/notes/starrocks-protocol.md
// §5.5), and each line of that log gives the reason of one rejected row,
// often with the column and the value. This file finds the URL in an error
// and reads the log's first lines.

const (
	// errorLogBytes bounds how much of an error log is read.
	errorLogBytes = 64 << 10
	// errorLogLineBytes bounds one quoted line.
	errorLogLineBytes = 512
)

var (
	trackingURLRE   = regexp.MustCompile(`(?i)tracking_url:\s*(https?://[^\s}"',]+)`)
	rejectedTableRE = regexp.MustCompile(`(?i)failed to load table\s+` + "`?" + `([A-Za-z0-9_$-]+)`)
	logColumnRE     = regexp.MustCompile(`(?i)column\s*(?:'([^']+)'|` + "`([^`]+)`" + `|:\s*([A-Za-z0-9_$-]+))`)
)

// TrackingURL returns the error-log URL an error's text carries ("" when
// none).
func TrackingURL(err error) string {
	if err == nil {
		return ""
	}
	m := trackingURLRE.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	return m[1]
}

// RejectedTable returns the table a commit failure names ("Failed to load
// table T", newer builds, §5.5), or "".
func RejectedTable(err error) string {
	if err == nil {
		return ""
	}
	m := rejectedTableRE.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	return m[1]
}

// ErrorLogColumn returns the column an error-log line names ("… column
// 'quantity' …", "… Column: quantity …"), or "".
func ErrorLogColumn(line string) string {
	m := logColumnRE.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1] + m[2] + m[3]
}

// ErrorLog reads the first maxLines non-empty lines of an error log (a
// tracking_url), within the request timeout. Credentials are sent only to
// a host of the configured load URLs (the emulator's FE serves the log
// behind them); a BE serves its error log without them.
func (c *Client) ErrorLog(ctx context.Context, rawURL string, maxLines int) ([]string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, errors.New("not an http(s) error-log URL without credentials")
	}
	if c.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building the error-log request: %w", err)
	}
	if c.auth != "" {
		for _, b := range c.bases {
			if strings.EqualFold(b.Scheme, u.Scheme) && strings.EqualFold(b.Host, u.Host) {
				req.Header.Set("Authorization", c.auth)
				break
			}
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the error log at %s: %w", u.Redacted(), err)
	}
	defer discard(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the error log at %s: HTTP %d", u.Redacted(), resp.StatusCode)
	}
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(resp.Body, errorLogBytes))
	sc.Buffer(make([]byte, 0, 4096), errorLogBytes)
	for sc.Scan() && len(lines) < maxLines {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if len(line) > errorLogLineBytes {
			line = line[:errorLogLineBytes] + "…"
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil && len(lines) == 0 {
		return nil, fmt.Errorf("reading the error log at %s: %w", u.Redacted(), err)
	}
	return lines, nil
}
