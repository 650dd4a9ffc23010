// Package starrocks is the only code of the project that knows the StarRocks
// transaction stream-load wire format: begin, load, prepare, commit and
// rollback (classic and multi-table), label-state queries, the cancel API and
// plain stream loads. Every reply is parsed as a case-insensitive map and
// classified so that callers decide what to do from a Class, never from a
// status string.
//
// # Transport
//
// Requests go to the FE load URLs in order, starting with the one that
// answered last. A connection error (nothing was sent) or a 5xx reply moves
// to the next URL; a logical reply (HTTP 200 with JSON, whatever its Status)
// never does. Redirects (307/308, FE → leader FE, FE → BE) are followed by
// hand, up to Config.MaxRedirects hops, re-sending the method, every header
// (Authorization included: net/http would drop it when the host changes)
// and the body; a loop is ErrRedirectLoop, too many hops
// ErrTooManyRedirects, and a hop from https to http ErrInsecureRedirect
// unless Config.AllowInsecureRedirect (real FEs always redirect to http://,
// so TLS covers only the FE leg then). Loads carry Expect: 100-continue so
// an FE that only redirects never receives the body.
//
// # Classification
//
// Every failure is an *Error whose Class tells the caller what to do; its
// Status and Message are StarRocks's own. Classify holds the whole table
// (see classRules); in short:
//
//   - OK: begin, prepare, commit (also "already committed"), rollback,
//     cancel and get_load_state with Status OK; loads with OK, Success or
//     Publish Timeout; a plain stream load whose label exists FINISHED.
//   - Fatal: HTTP 401/403 or "Access denied"; a TLS handshake that failed
//     on the certificate or the protocol; a refused https → http redirect;
//     "load request not equal
//     last." (the client changed a table's load headers); INVALID_ARGUMENT,
//     other 4xx, "Empty label", "Unsupported operation" (prepare in multi
//     mode), a BE given as load URL; a begin reply without Status.
//   - RetrySafe: TXN_IN_PROCESSING (the request was refused, nothing was
//     ingested; send it again).
//   - Ambiguous: a commit (or plain stream load) without reply, with a 5xx
//     or with any non-OK Status that is not a data abort — decide by
//     LoadState/WaitFinal, never replay blindly.
//   - PerTxn: the data made the server abort: "No rows were imported",
//     "No partitions have data", "all partitions have no load data",
//     "abnormal data more than max filter rate", "too many filtered rows";
//     an unknown table or database, "Request database … not equal",
//     "Only primary key table support", "primary key size exceed".
//   - Transient: everything else on begin/load/prepare (transport errors,
//     5xx, INTERNAL_ERROR, TXN_NOT_EXISTS, a transaction that does not
//     exist, timed out, is aborting or was cancelled, the running-txn
//     limit, LABEL_ALREADY_EXISTS on begin: take a new label), every
//     rollback, cancel and get_load_state failure.
//
// Names and labels are validated before they reach a header (ValidateName,
// ValidateLabel); the password never appears in an error.
package starrocks
