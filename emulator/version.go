package emulator

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The StarRocks version the emulator answers as (Config.StarRocksVersion, --starrocks-version),
// and what differs between the versions it models. The facts and their sources are in
// docs/notes/starrocks-protocol.md §12; each predicate below names the section.

// srVersion is a StarRocks release, major.minor.patch.
type srVersion struct{ major, minor, patch int }

// defaultVersion is the version the emulator answers as when none is given: the 4.x
// behaviour it has always had (multi-table transactions, the prepared_timeout header).
var defaultVersion = srVersion{4, 0, 0}

// versionCommitHash stands where a StarRocks build prints its short commit hash
// (current_version(), @@version_comment, SHOW FRONTENDS' Version, /api/bootstrap's
// feVersion): "<version>-emulator" names what answers without breaking the form.
const versionCommitHash = "emulator"

// parseVersion reads "3.3", "3.5.4" or "4.0" ("" is defaultVersion). A missing patch is 0:
// "3.5" is 3.5.0, before prepared_timeout (3.5.4). The emulator models 3.3 and later: the
// 3.3 and 3.4 sources are what §12 was checked against, 3.5 lies between them and 4.0.
func parseVersion(s string) (srVersion, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return defaultVersion, nil
	}
	parts := strings.Split(s, ".")
	var v srVersion
	nums := []*int{&v.major, &v.minor, &v.patch}
	if len(parts) > len(nums) {
		return v, fmt.Errorf("the StarRocks version %q is not major.minor or major.minor.patch (e.g. 3.3, 3.5.4, 4.0)", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, fmt.Errorf("the StarRocks version %q is not major.minor or major.minor.patch (e.g. 3.3, 3.5.4, 4.0)", s)
		}
		*nums[i] = n
	}
	if len(parts) < 2 {
		return v, fmt.Errorf("the StarRocks version %q needs a minor version (e.g. 3.3, 4.0)", s)
	}
	if !v.atLeast(3, 3, 0) {
		return v, fmt.Errorf("the StarRocks version %s is older than the emulator models: use 3.3 or later (3.3, 3.4, 3.5, 3.5.4, 4.0)", v)
	}
	return v, nil
}

func (v srVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

func (v srVersion) atLeast(major, minor, patch int) bool {
	switch {
	case v.major != major:
		return v.major > major
	case v.minor != minor:
		return v.minor > minor
	}
	return v.patch >= patch
}

// multiTable: multi-table transactions (transaction_type: multi), the FE's
// MultiStatementTransactionHandler and the BE's refusal of transaction_type, exist from 4.0
// (§12.1). Before, the header means nothing to the FE or the BE.
func (v srVersion) multiTable() bool { return v.major >= 4 }

// preparedTimeout: the prepare's prepared_timeout header, and the PreparedTime and
// PreparedTimeoutMs columns of SHOW PROC '/transactions/…', come with 3.5.4 (§12.3).
// Before, the header is ignored and prepared_transaction_default_timeout_second applies.
func (v srVersion) preparedTimeout() bool { return v.atLeast(3, 5, 4) }

// exceptionPrefix is how the FE's TransactionLoadAction prints the class of the exception
// before its message in a FAILED TransactionResult: UserException up to 3.4 (3.3.7 and 3.4.3
// sources), StarRocksException after the rename (StarRocks PR #53357, on main from
// 2024-11-29: 3.5 on) (§12.5).
func (v srVersion) exceptionPrefix() string {
	if v.atLeast(3, 5, 0) {
		return "class com.starrocks.common.StarRocksException: "
	}
	return "class com.starrocks.common.UserException: "
}

// inProcessingMsg is the BE's TXN_IN_PROCESSING text: 3.3's transaction_stream_load.cpp and
// transaction_mgr.cpp say "Transaction in processing, please retry later"; from 3.4
// StreamLoadContext::try_lock says "Transaction is in processing" (§12.5).
func (v srVersion) inProcessingMsg() string {
	if v.atLeast(3, 4, 0) {
		return "Transaction is in processing"
	}
	return "Transaction in processing, please retry later"
}

// beTimeoutMsg is the reason the BE's reaper (TransactionMgr::_clean_stream_context) gives a
// transaction it rolls back for its timeout or idle timeout: 3.3 names neither the kind's
// seconds ("transaction is aborted by timeout."), 3.4 on does.
func (v srVersion) beTimeoutMsg(kind string, d time.Duration) string {
	if v.atLeast(3, 4, 0) {
		return fmt.Sprintf("transaction is aborted by %s %d seconds.", kind, int64(d/time.Second))
	}
	return fmt.Sprintf("transaction is aborted by %s.", kind)
}

// errNoPartitionsHaveData is ERR_NO_PARTITIONS_HAVE_DATA_LOAD (5603) as 3.3 and 3.4 word it.
const errNoPartitionsHaveData = "No partitions have data available for loading. If you are sure there may be no data to be loaded, you can use `ADMIN SET FRONTEND CONFIG ('empty_load_as_error' = 'false')` to ensure such load jobs can succeed"

// noRowsMsg is the FE's error for a load that imported no rows (5603): 3.3 and 3.4 have
// ERR_NO_PARTITIONS_HAVE_DATA_LOAD; StarRocks PR #66535 reworded it ERR_NO_ROWS_IMPORTED
// with backports to 4.0 and 3.5 (§5.5).
func (v srVersion) noRowsMsg() string {
	if v.atLeast(3, 5, 0) {
		return errNoRowsImported
	}
	return errNoPartitionsHaveData
}

// buildVersion is "<version>-<commit hash>": current_version() (the BE's
// UtilityFunctions::current_version), @@version_comment (GlobalVariable.versionComment),
// SHOW FRONTENDS' Version and /api/bootstrap's feVersion all print this (§12.2).
func (v srVersion) buildVersion() string { return v.String() + "-" + versionCommitHash }
