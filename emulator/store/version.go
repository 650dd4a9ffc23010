package store

import (
	"context"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// ServerVersion is the StarRocks release the MySQL port answers as (WithVersion).
type ServerVersion struct {
	// Current is current_version(), "<version>-<commit hash>" (StarRocks 3.x:
	// UtilityFunctions::current_version).
	Current string
	// Comment is @@version_comment (GlobalVariable.versionComment, the same
	// "<version>-<commit hash>" in 3.x).
	Comment string
	// PreparedColumns adds PreparedTime (after PrepareTime) and PreparedTimeoutMs (after
	// TimeoutMs) to SHOW PROC '/transactions/<db>/…' and SHOW TRANSACTION, as StarRocks has
	// them from 3.5.4, with the prepared_timeout header.
	PreparedColumns bool
}

var defaultServerVersion = ServerVersion{Current: Version, Comment: VersionComment}

// WithVersion makes the MySQL port answer as v: current_version(), @@version_comment (per
// session: two servers in one process may answer as different versions) and the
// transaction columns.
func WithVersion(v ServerVersion) MySQLOption {
	return func(h *ddlHandler) { h.version = v }
}

// registerVersion defines current_version() on the engine's catalog.
func (h *ddlHandler) registerVersion(cat interface {
	RegisterFunction(*sql.Context, ...sql.Function)
}) {
	current := h.version.Current
	cat.RegisterFunction(sql.NewEmptyContext(), sql.NewFunction0("current_version", func() sql.Expression {
		return expression.NewLiteral(current, types.LongText)
	}))
}

// sessionBuilder builds a session whose @@version_comment is the server's. The variable is
// global-only and read-only in go-mysql-server, so it is initialised in each session
// rather than assigned once for the process.
func (h *ddlHandler) sessionBuilder(ctx context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
	s, err := sessionBuilder(ctx, conn, addr)
	if err != nil {
		return nil, err
	}
	if err := s.InitSessionVariable(sql.NewEmptyContext(), "version_comment", h.version.Comment); err != nil {
		return nil, fmt.Errorf("setting @@version_comment: %w", err)
	}
	return s, nil
}

// transColumns are TransProcDir.TITLE_NAMES of the server's version.
func (h *ddlHandler) transColumns() []string {
	if !h.version.PreparedColumns {
		return transColumns
	}
	return []string{"TransactionId", "Label", "Coordinator", "TransactionStatus", "LoadJobSourceType",
		"PrepareTime", "PreparedTime", "CommitTime", "PublishTime", "FinishTime", "Reason", "ErrorReplicasCount",
		"ListenerId", "TimeoutMs", "PreparedTimeoutMs", "ErrMsg"}
}

// transRow is one transaction in the columns of transColumns.
func (h *ddlHandler) transRow(t TxnInfo) []*string {
	r := transRow(t)
	if !h.version.PreparedColumns {
		return r
	}
	out := make([]*string, 0, len(r)+2)
	out = append(out, r[:6]...)                 // … PrepareTime
	out = append(out, timeCell(t.PreparedTime)) // PreparedTime
	out = append(out, r[6:13]...)               // CommitTime … TimeoutMs
	out = append(out, num(t.PreparedTimeoutMs))
	return append(out, r[13:]...) // ErrMsg
}
