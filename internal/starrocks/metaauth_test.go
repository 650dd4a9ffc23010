package starrocks

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	vmysql "github.com/dolthub/vitess/go/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ldapPlugin stands for StarRocks's authentication_ldap_simple: the server
// gets the password in clear text (mysql_clear_password) and checks it.
type ldapPlugin struct{ password string }

func (p ldapPlugin) Authenticate(_ *mysql_db.MySQLDb, _ string, _ *mysql_db.User, pass string) (bool, error) {
	return pass == p.password, nil
}

// ldapMySQL is a MySQL server (go-mysql-server, as the emulator's) whose
// account user authenticates as an LDAP account of StarRocks does: the
// server switches the client to mysql_clear_password and checks the
// password it sends. The databases shop and other exist; user holds every
// privilege, "narrow" (the same password) only privileges on other.
func ldapMySQL(t *testing.T, user, password string) string {
	t.Helper()
	pro := memory.NewDBProvider(memory.NewDatabase("shop"), memory.NewDatabase("other"))
	engine := sqle.NewDefault(pro)
	mdb := engine.Analyzer.Catalog.MySQLDb
	mdb.SetPlugins(map[string]mysql_db.PlaintextAuthPlugin{"authentication_ldap_simple": ldapPlugin{password: password}})
	ed := mdb.Editor()
	ed.PutUser(&mysql_db.User{User: user, Host: "%", Plugin: "authentication_ldap_simple",
		PrivilegeSet: mysql_db.NewPrivilegeSetWithAllPrivileges(), PasswordLastChanged: time.Unix(1, 0).UTC()})
	narrow := mysql_db.NewPrivilegeSet()
	narrow.AddDatabase("other", gms.PrivilegeType_Select, gms.PrivilegeType_Insert)
	ed.PutUser(&mysql_db.User{User: "narrow", Host: "%", Plugin: "authentication_ldap_simple",
		PrivilegeSet: narrow, PasswordLastChanged: time.Unix(1, 0).UTC()})
	ed.Close()
	mdb.SetEnabled(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// StarRocks sends the switch to the clear-text plugin without TLS.
	cfg := server.Config{Protocol: "tcp", Address: ln.Addr().String(), Listener: ln, AllowClearTextWithoutTLS: true}
	sessions := func(_ context.Context, c *vmysql.Conn, addr string) (gms.Session, error) {
		u, _ := c.UserData.(gms.MysqlConnectionUser)
		client := gms.Client{Address: u.Host, User: u.User, Capabilities: c.Capabilities}
		return memory.NewSession(gms.NewBaseSessionWithClientServer(addr, client, c.ConnectionID), pro), nil
	}
	srv, err := server.NewServer(cfg, engine, gms.NewContext, sessions, nil)
	require.NoError(t, err)
	go func() { _ = srv.Start() }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// unknownPluginMySQL greets with mysql_native_password and then asks the
// client to switch to an authentication plugin the driver does not have.
func unknownPluginMySQL(t *testing.T, plugin string) string {
	t.Helper()
	return listen(t, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		caps := uint32(capLongPassword | capProtocol41 | capSecureConn | capPluginAuth)
		p := []byte{10}
		p = append(p, "8.0.33\x00"...)
		p = binary.LittleEndian.AppendUint32(p, 7)
		p = append(p, "abcdefgh"...)
		p = append(p, 0)
		p = binary.LittleEndian.AppendUint16(p, uint16(caps))
		p = append(p, 33)
		p = binary.LittleEndian.AppendUint16(p, 2)
		p = binary.LittleEndian.AppendUint16(p, uint16(caps>>16))
		p = append(p, 21)
		p = append(p, make([]byte, 10)...)
		p = append(p, "ijklmnopqrst\x00"...)
		p = append(p, "mysql_native_password\x00"...)
		if _, err := c.Write(append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 0}, p...)); err != nil {
			return
		}
		// The client's handshake response.
		hdr := make([]byte, 4)
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(hdr[0])|int64(hdr[1])<<8|int64(hdr[2])<<16); err != nil {
			return
		}
		sw := append([]byte{0xfe}, plugin+"\x00"...)
		sw = append(sw, "01234567890123456789\x00"...)
		_, _ = c.Write(append([]byte{byte(len(sw)), byte(len(sw) >> 8), byte(len(sw) >> 16), hdr[3] + 1}, sw...))
		_, _ = io.Copy(io.Discard, c)
	})
}

// An account whose authentication plugin the client will not use is refused
// at the probe as a definite failure every FE shares, naming the plugin and
// the fix; with clear-text passwords allowed, an LDAP account connects.
func TestMetaProbeAuthenticationPlugins(t *testing.T) {
	ldap := ldapMySQL(t, "ldapuser", "ldap-pw")
	probe := func(t *testing.T, cfg MetaConfig, db string) *ProbeError {
		t.Helper()
		cfg.Timeout = 5 * time.Second
		m, err := OpenMetaWith(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		return m.Probe(context.Background(), db)
	}

	t.Run("LDAP account, clear text not allowed", func(t *testing.T) {
		got := probe(t, MetaConfig{Addr: ldap, User: "ldapuser", Password: "ldap-pw"}, "shop")
		require.NotNil(t, got)
		assert.Equal(t, CauseAuthPlugin, got.Cause, "%v", got)
		assert.True(t, got.Cause.Definite() && got.Cause.Shared())
		var pe *AuthPluginError
		require.True(t, errors.As(got, &pe), "%v", got)
		assert.True(t, pe.Cleartext)
		assert.Contains(t, got.Error(), "mysql_clear_password")
		assert.Contains(t, got.Error(), "LDAP")
		assert.NotContains(t, got.Error(), "ldap-pw")
	})
	t.Run("LDAP account, clear text allowed", func(t *testing.T) {
		assert.Nil(t, probe(t, MetaConfig{Addr: ldap, User: "ldapuser", Password: "ldap-pw", AllowCleartextPasswords: true}, "shop"))
		got := probe(t, MetaConfig{Addr: ldap, User: "ldapuser", Password: "wrong", AllowCleartextPasswords: true}, "shop")
		require.NotNil(t, got)
		assert.Equal(t, CauseAuth, got.Cause, "%v", got)
	})
	t.Run("a plugin the driver does not have", func(t *testing.T) {
		got := probe(t, MetaConfig{Addr: unknownPluginMySQL(t, "authentication_kerberos_client"), User: "u", Password: "pw"}, "shop")
		require.NotNil(t, got)
		assert.Equal(t, CauseAuthPlugin, got.Cause, "%v", got)
		assert.Contains(t, got.Error(), "authentication_kerberos_client")
	})
}

// A database the user holds no privilege on is missing from
// information_schema.schemata as if it did not exist: the probe's error says
// it may not exist or the user may not see it, and what to do.
func TestMetaProbeDatabaseTheUserMayNotSee(t *testing.T) {
	addr := ldapMySQL(t, "ldapuser", "ldap-pw")
	m, err := OpenMetaWith(MetaConfig{Addr: addr, User: "narrow", Password: "ldap-pw", AllowCleartextPasswords: true, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.Nil(t, m.Probe(context.Background(), "other"))
	got := m.Probe(context.Background(), "shop")
	require.NotNil(t, got)
	assert.Equal(t, CauseNoDatabase, got.Cause, "%v", got)
	assert.Contains(t, got.Error(), `it does not exist, or user "narrow" may not see it`)
	assert.Contains(t, got.Error(), "grant the user its privileges on it")
}

// ReadProgress returns the row of pipeline's partition in the progress
// table of every database that has one: ReadProgressOf for one partition,
// for the tests that read one.
func (m *Meta) ReadProgress(ctx context.Context, table, pipeline, partition string) ([]ProgressRow, error) {
	rows, err := m.ReadProgressOf(ctx, table, pipeline, []string{partition})
	return rows[partition], err
}
