package store

import (
	"sync"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/variables"
)

// go-mysql-server's engine constructor (sqle.New) initialises the process-wide status
// variables: the first call assigns the global registry every new session reads, and every
// call resets the values. Two emulators started at once in one process, or a where header
// compiled while a session starts, race on them. The registry is therefore created once when
// the package loads, before any session can exist, and every engine the store builds is built
// under engineMu.

func init() { variables.InitStatusVariables() }

var engineMu sync.Mutex

// newEngine builds a go-mysql-server engine over pro, one at a time.
func newEngine(pro sql.DatabaseProvider) *sqle.Engine {
	engineMu.Lock()
	defer engineMu.Unlock()
	return sqle.NewDefault(pro)
}
