package store

import "errors"

// MySQLServer is a running MySQL-protocol server over a Store.
type MySQLServer interface {
	Addr() string
	Close() error
}

// ServeMySQL starts a MySQL-protocol server on addr ("127.0.0.1:0" picks a free port) over
// the committed data, accepting user/password.
func (s *Store) ServeMySQL(addr, user, password string) (MySQLServer, error) {
	return nil, errors.New("mysql server: being implemented")
}
