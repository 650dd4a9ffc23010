// Package inspect is the `inspect` subcommand of the project's binary: it
// reads, over the FE's MySQL port, what a pipeline of the starrocks_txn
// output keeps in StarRocks (ARCHITECTURE.md §7) and prints it for an
// operator: per source partition and database the committed offset, the
// last source transaction committed, the label that committed it and its
// age; and the writer rows, each run's row with the labels it had open —
// a live run's, or one that died, whose open labels may still be committed
// (a successor makes them final before it reads the progress). It reads
// through the metadata client of internal/starrocks, the same statements the
// output runs, and changes nothing.
package inspect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Options say what to read.
type Options struct {
	// MySQL is the FE MySQL-protocol address (host:9030).
	MySQL          string
	User, Password string
	// TLS, when not nil, encrypts the connection.
	TLS           *tls.Config
	PipelineID    string
	ProgressTable string
}

// Report is what inspect prints; --json prints it as it is.
type Report struct {
	PipelineID    string      `json:"pipeline_id"`
	ProgressTable string      `json:"progress_table"`
	WritersTable  string      `json:"writers_table"`
	ReadAt        time.Time   `json:"read_at"`
	Partitions    []Partition `json:"partitions"`
	Writers       []Writer    `json:"writers"`
}

// Partition is one partition's progress row in one database.
type Partition struct {
	Partition       string     `json:"partition"`
	Database        string     `json:"database"`
	CommittedOffset int64      `json:"committed_offset"`
	TxnEndOffset    int64      `json:"txn_end_offset"`
	SourceTxnID     string     `json:"source_txn_id"`
	Label           string     `json:"label"`
	UpdatedAt       *time.Time `json:"updated_at"`
	AgeSeconds      *int64     `json:"age_seconds"`
}

// Writer is one writer row: a run of the output in one database.
type Writer struct {
	Database string `json:"database"`
	Writer   string `json:"writer"`
	// Label wrote the row; LabelNumber is its number, or the higher number
	// of the writer's row committed before it. OpenLabels were
	// begun and not yet final when it was written: they may still be
	// committed.
	Label       string     `json:"label"`
	LabelNumber int64      `json:"label_number"`
	OpenLabels  []string   `json:"open_labels"`
	UpdatedAt   *time.Time `json:"updated_at"`
	AgeSeconds  *int64     `json:"age_seconds"`
}

// metaReader is the part of the metadata client inspect reads with.
type metaReader interface {
	ReadPipelineProgress(ctx context.Context, table, pipeline string) ([]starrocks.ProgressDetail, error)
	ReadWriterRows(ctx context.Context, table, pipeline string) (map[string][]starrocks.WriterRow, error)
	DatabasesWith(ctx context.Context, table string) ([]string, error)
}

// ErrNoTables means no database holds the progress table.
var ErrNoTables = errors.New("no database holds the progress table")

// Read builds the report from m at now.
func Read(ctx context.Context, m metaReader, pipeline, progressTable string, now time.Time) (*Report, error) {
	writersTable := starrocks.WritersTable(progressTable)
	r := &Report{PipelineID: pipeline, ProgressTable: progressTable, WritersTable: writersTable, ReadAt: now.UTC(),
		Partitions: []Partition{}, Writers: []Writer{}}
	dbs, err := m.DatabasesWith(ctx, progressTable)
	if err != nil {
		return nil, err
	}
	wdbs, err := m.DatabasesWith(ctx, writersTable)
	if err != nil {
		return nil, err
	}
	if len(dbs) == 0 && len(wdbs) == 0 {
		return nil, fmt.Errorf("%w %s nor its writers table %s: the pipeline never committed with exactly_once or writer rows, or --progress-table names another table", ErrNoTables, progressTable, writersTable)
	}
	progress, err := m.ReadPipelineProgress(ctx, progressTable, pipeline)
	if err != nil {
		return nil, err
	}
	for _, p := range progress {
		r.Partitions = append(r.Partitions, Partition{
			Partition: p.Partition, Database: p.DB, CommittedOffset: p.Through, TxnEndOffset: p.TxnEnd,
			SourceTxnID: p.TxnID, Label: p.Label, UpdatedAt: timeOrNil(p.Updated), AgeSeconds: ageOf(p.Updated, now),
		})
	}
	sort.SliceStable(r.Partitions, func(i, j int) bool {
		a, b := r.Partitions[i], r.Partitions[j]
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Database < b.Database
	})
	writers, err := m.ReadWriterRows(ctx, writersTable, pipeline)
	if err != nil {
		return nil, err
	}
	for db, rows := range writers {
		for _, w := range rows {
			out := Writer{Database: db, Writer: w.Writer, Label: w.Label, LabelNumber: w.Number, OpenLabels: []string{},
				UpdatedAt: timeOrNil(w.Updated), AgeSeconds: ageOf(w.Updated, now)}
			stem, _, ok := starrocks.SplitSeqLabel(w.Label)
			for _, n := range w.Open {
				if ok {
					out.OpenLabels = append(out.OpenLabels, starrocks.StemLabel(stem, n))
				} else {
					out.OpenLabels = append(out.OpenLabels, fmt.Sprintf("#%d", n))
				}
			}
			r.Writers = append(r.Writers, out)
		}
	}
	sort.Slice(r.Writers, func(i, j int) bool {
		a, b := r.Writers[i], r.Writers[j]
		if a.Database != b.Database {
			return a.Database < b.Database
		}
		return a.Writer < b.Writer
	})
	return r, nil
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func ageOf(t, now time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	s := int64(now.Sub(t).Round(time.Second) / time.Second)
	return &s
}

// WriteJSON prints r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText prints r as two plain tables.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "pipeline %s: progress table %s, writers table %s, read at %s\n\n",
		r.PipelineID, r.ProgressTable, r.WritersTable, r.ReadAt.Format(starrocks.RowTimeLayout+" MST"))
	fmt.Fprintln(w, "PARTITIONS (committed offset: every source transaction ending at or below it is resolved)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(r.Partitions) == 0 {
		fmt.Fprintf(tw, "(no progress rows for pipeline_id %s)\n", r.PipelineID)
	} else {
		fmt.Fprintln(tw, "PARTITION\tDATABASE\tCOMMITTED_OFFSET\tTXN_END_OFFSET\tSOURCE_TXN\tLABEL\tUPDATED_AT\tAGE")
		for _, p := range r.Partitions {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", p.Partition, p.Database, p.CommittedOffset, p.TxnEndOffset,
				orDash(p.SourceTxnID), orDash(p.Label), timeText(p.UpdatedAt), ageText(p.AgeSeconds))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "WRITERS (a live run's row, or the row of one that died: its open labels may still be committed)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(r.Writers) == 0 {
		fmt.Fprintf(tw, "(no writer rows for pipeline_id %s)\n", r.PipelineID)
	} else {
		fmt.Fprintln(tw, "DATABASE\tWRITER\tLABEL\tLABEL_NUMBER\tOPEN_LABELS\tUPDATED_AT\tAGE")
		for _, wr := range r.Writers {
			open := "-"
			if len(wr.OpenLabels) > 0 {
				open = strings.Join(wr.OpenLabels, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", wr.Database, wr.Writer, orDash(wr.Label), wr.LabelNumber, open,
				timeText(wr.UpdatedAt), ageText(wr.AgeSeconds))
		}
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func timeText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(starrocks.RowTimeLayout)
}

func ageText(s *int64) string {
	if s == nil {
		return "-"
	}
	return (time.Duration(*s) * time.Second).String()
}

// Run opens the metadata client of o, reads and prints the report.
func Run(ctx context.Context, o Options, asJSON bool, out io.Writer) error {
	switch {
	case o.MySQL == "":
		return errors.New("--mysql is required: the FE MySQL-protocol address, e.g. fe:9030")
	case strings.Contains(o.MySQL, "@"):
		// A DSN habit (user:password@host:port): the driver would dial the
		// whole text and quote it, password included, in its error.
		return errors.New("credentials are not allowed in --mysql; set --user and --password")
	case o.PipelineID == "":
		return errors.New("--pipeline-id is required: the pipeline_id of the starrocks_txn output")
	}
	if o.ProgressTable == "" {
		o.ProgressTable = starrocks.DefaultProgressTable
	}
	if err := starrocks.ValidateName("table", o.ProgressTable); err != nil {
		return fmt.Errorf("--progress-table: %w", err)
	}
	m, err := starrocks.OpenMetaWith(starrocks.MetaConfig{Addr: o.MySQL, User: o.User, Password: o.Password, TLS: o.TLS})
	if err != nil {
		return err
	}
	defer m.Close()
	if p := m.Probe(ctx, ""); p != nil {
		return fmt.Errorf("connecting to the MySQL port: %w", p)
	}
	r, err := Read(ctx, m, o.PipelineID, o.ProgressTable, time.Now())
	if err != nil {
		return err
	}
	if asJSON {
		return r.WriteJSON(out)
	}
	return r.WriteText(out)
}

// Command is the `inspect` subcommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "Print what a starrocks_txn pipeline keeps in StarRocks: its partitions' progress and its writer rows",
		Description: `Reads, over the FE MySQL port, the progress table of a pipeline of the
starrocks_txn output (semantic exactly_once) and its writers table
(<progress_table>_writers, also kept in at_least_once with pipeline_id and
mysql_address), in every database that holds them, and prints:

  - per source partition and database: the committed offset, the END offset
    and id of the last source transaction committed, the label that
    committed it, when, and how long ago;
  - per writer row (one run of the output in one database): the label that
    wrote it, its number, the labels the run had open then, and the row's
    age. A live run's row is there too; a run that died leaves its row, and
    its open labels may still be committed until a successor makes them
    final.

It changes nothing. --json prints the same as JSON.

  inspect --mysql fe:9030 --user root --pipeline-id orders-cdc`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mysql", Usage: "FE MySQL-protocol address (host:port)", Required: true},
			&cli.StringFlag{Name: "user", Value: "root", Usage: "StarRocks user"},
			&cli.StringFlag{Name: "password", Usage: "StarRocks password (or set STARROCKS_PASSWORD)", EnvVars: []string{"STARROCKS_PASSWORD"}},
			&cli.StringFlag{Name: "pipeline-id", Usage: "the output's pipeline_id", Required: true},
			&cli.StringFlag{Name: "progress-table", Value: starrocks.DefaultProgressTable, Usage: "the output's progress_table"},
			&cli.BoolFlag{Name: "tls", Usage: "connect with TLS"},
			&cli.StringFlag{Name: "tls-ca-file", Usage: "PEM file of the certificate authorities to trust (implies --tls)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Action: func(c *cli.Context) error {
			o := Options{MySQL: c.String("mysql"), User: c.String("user"), Password: c.String("password"),
				PipelineID: c.String("pipeline-id"), ProgressTable: c.String("progress-table")}
			if c.Bool("tls") || c.String("tls-ca-file") != "" {
				o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
				if f := c.String("tls-ca-file"); f != "" {
					pem, err := os.ReadFile(f)
					if err != nil {
						return fmt.Errorf("--tls-ca-file: %w", err)
					}
					pool := x509.NewCertPool()
					if !pool.AppendCertsFromPEM(pem) {
						return fmt.Errorf("--tls-ca-file %s holds no PEM certificate", f)
					}
					o.TLS.RootCAs = pool
				}
			}
			out := c.App.Writer
			if out == nil {
				out = os.Stdout
			}
			if err := Run(c.Context, o, c.Bool("json"), out); err != nil {
				return cli.Exit("inspect: "+err.Error(), 1)
			}
			return nil
		},
	}
}
