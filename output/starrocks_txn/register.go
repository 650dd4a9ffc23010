package starrocks_txn

import (
	"context"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

func init() {
	service.MustRegisterBatchOutput("starrocks_txn", outputSpec(),
		func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			c, err := configFromParsed(conf)
			if err != nil {
				return nil, service.BatchPolicy{}, 0, err
			}
			cl, err := newStarRocksClient(c)
			if err != nil {
				return nil, service.BatchPolicy{}, 0, err
			}
			var dl deadLetter
			if deadLetterSet(conf) {
				owned, err := conf.FieldOutput(fieldDeadLetter)
				if err != nil {
					return nil, service.BatchPolicy{}, 0, fmt.Errorf("creating dead_letter: %w", err)
				}
				dl = owned
			}
			o := newOutput(c, srClient{cl}, dl, mgr)
			if c.mysqlAddress != "" {
				if o.meta, err = openMeta(c, o.log); err != nil {
					return nil, service.BatchPolicy{}, 0, err
				}
			}
			o.enableProgress()
			if o.meta != nil {
				o.enableSchemas(o.meta, mgr.Metrics())
			} else {
				o.enableSchemas(nil, mgr.Metrics())
			}
			return o, c.batching, c.maxInFlight, nil
		})
}

// srClient adapts *starrocks.Client to txnClient: the output decides from
// the error's class alone, so the replies are not needed.
type srClient struct{ c *starrocks.Client }

func (s srClient) Begin(ctx context.Context, t starrocks.Txn) error {
	_, err := s.c.Begin(ctx, t)
	return connHint(err)
}

func (s srClient) Load(ctx context.Context, r starrocks.LoadRequest) error {
	_, err := s.c.Load(ctx, r)
	return connHint(err)
}

func (s srClient) Prepare(ctx context.Context, t starrocks.Txn) error {
	_, err := s.c.Prepare(ctx, t)
	return connHint(err)
}

func (s srClient) Commit(ctx context.Context, t starrocks.Txn) error {
	_, err := s.c.Commit(ctx, t)
	return connHint(err)
}

func (s srClient) Rollback(ctx context.Context, t starrocks.Txn) error {
	_, err := s.c.Rollback(ctx, t)
	return connHint(err)
}

func (s srClient) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	return s.c.WaitFinal(ctx, db, label, maxWait)
}

func (s srClient) Cancel(ctx context.Context, db, label string) error {
	return s.c.Cancel(ctx, db, label)
}

func (s srClient) ErrorLog(ctx context.Context, url string, maxLines int) ([]string, error) {
	return s.c.ErrorLog(ctx, url, maxLines)
}
