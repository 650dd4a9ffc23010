package debezium_txn

import (
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// javaBytes is Java's BigInteger.toByteArray: the shortest big-endian two's
// complement form, which Kafka Connect's Decimal and Debezium's
// VariableScaleDecimal carry.
func javaBytes(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// Smallest L with -2^(8L-1) <= n.
	l := 1
	for {
		lim := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(8*l-1)))
		if n.Cmp(lim) >= 0 {
			break
		}
		l++
	}
	v := new(big.Int).Add(n, new(big.Int).Lsh(big.NewInt(1), uint(8*l)))
	b := v.Bytes()
	for len(b) < l {
		b = append([]byte{0}, b...)
	}
	return b
}

func b64(n *big.Int) string { return base64.StdEncoding.EncodeToString(javaBytes(n)) }

func conv(t *testing.T, c fieldConv, raw string) string {
	t.Helper()
	out, err := valueWriter{loc: time.UTC}.convert(nil, c, []byte(raw))
	require.NoError(t, err, "converting %s", raw)
	return string(out)
}

func TestDecimalValues(t *testing.T) {
	dec := func(scale int32) fieldConv { return fieldConv{kind: convDecimal, scale: scale} }
	cases := []struct {
		n     int64
		scale int32
		want  string
	}{
		{1234, 2, `"12.34"`},
		{-1234, 2, `"-12.34"`},
		{5, 3, `"0.005"`},
		{-5, 3, `"-0.005"`},
		{0, 2, `"0.00"`},
		{128, 0, `"128"`},
		{-128, 0, `"-128"`},
		{-129, 1, `"-12.9"`},
		{7, -2, `"700"`},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, conv(t, dec(c.scale), strconv.Quote(b64(big.NewInt(c.n)))), "%d scale %d", c.n, c.scale)
	}
	// decimal.format=NUMERIC prints a JSON number: its text is kept exactly.
	assert.Equal(t, `"12345678901234567890.123"`, conv(t, dec(3), `12345678901234567890.123`))
	assert.Equal(t, `null`, conv(t, dec(2), `null`))
	// Not base64 (decimal.handling.mode=precise without the schema's scale
	// is what this catches): an error, not a wrong value.
	_, err := valueWriter{}.convert(nil, dec(2), []byte(`"12.34!"`))
	require.ErrorContains(t, err, "base64")
	// Java's one-byte encoding of 0 and a 2-byte value.
	assert.Equal(t, `"0.0"`, conv(t, dec(1), `"AA=="`))
	assert.Equal(t, `"2.55"`, conv(t, dec(2), `"AP8="`))
}

func TestVariableScaleDecimal(t *testing.T) {
	c := fieldConv{kind: convVariableDecimal}
	assert.Equal(t, `"-3.14159"`, conv(t, c, `{"scale":5,"value":"`+b64(big.NewInt(-314159))+`"}`))
	assert.Equal(t, `"42"`, conv(t, c, `{"scale":0,"value":"`+b64(big.NewInt(42))+`"}`))
	assert.Equal(t, `"4200"`, conv(t, c, `{"scale":-2,"value":"`+b64(big.NewInt(42))+`"}`))
	_, err := valueWriter{}.convert(nil, c, []byte(`{"scale":"x","value":"AA=="}`))
	require.Error(t, err)
}

// Property: every unscaled value and scale renders as the exact decimal
// text, as big.Rat prints it.
func TestDecimalTextProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		digits := rapid.StringMatching(`-?[0-9]{1,40}`).Draw(t, "digits")
		scale := rapid.Int32Range(0, 30).Draw(t, "scale")
		n, ok := new(big.Int).SetString(digits, 10)
		if !ok {
			t.Fatalf("bad digits %q", digits)
		}
		got, err := decimalText(javaBytes(n), scale)
		if err != nil {
			t.Fatal(err)
		}
		want := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(int(scale))
		if n.Sign() < 0 && want[0] != '-' {
			want = "-" + want
		}
		if got != want {
			t.Fatalf("%s scale %d: got %s, want %s", digits, scale, got, want)
		}
	})
}

func TestTemporalValues(t *testing.T) {
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	days := day.Unix() / 86400
	assert.Equal(t, `"2026-11-29"`, conv(t, fieldConv{kind: convDate}, strconv.FormatInt(days, 10)))
	assert.Equal(t, `"1969-12-31"`, conv(t, fieldConv{kind: convDate}, `-1`))

	ts := time.Date(2026, 11, 29, 12, 34, 56, 789_123_456, time.UTC)
	assert.Equal(t, `"2026-11-29 12:34:56.789000"`, conv(t, fieldConv{kind: convTimestampMS}, strconv.FormatInt(ts.UnixMilli(), 10)))
	assert.Equal(t, `"2026-11-29 12:34:56.789123"`, conv(t, fieldConv{kind: convTimestampUS}, strconv.FormatInt(ts.UnixMicro(), 10)))
	assert.Equal(t, `"2026-11-29 12:34:56.789123456"`, conv(t, fieldConv{kind: convTimestampNS}, strconv.FormatInt(ts.UnixNano(), 10)))
	assert.Equal(t, `"2026-11-29 12:00:00"`, conv(t, fieldConv{kind: convTimestampMS}, strconv.FormatInt(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixMilli(), 10)))
	// Numbers printed as strings are read too.
	assert.Equal(t, `"2026-11-29"`, conv(t, fieldConv{kind: convDate}, strconv.Quote(strconv.FormatInt(days, 10))))

	assert.Equal(t, `"10:15:30"`, conv(t, fieldConv{kind: convTimeMillis}, strconv.Itoa((10*3600+15*60+30)*1000)))
	assert.Equal(t, `"10:15:30.000123"`, conv(t, fieldConv{kind: convTimeMicros}, strconv.Itoa((10*3600+15*60+30)*1_000_000+123)))
	assert.Equal(t, `"00:00:01.000000001"`, conv(t, fieldConv{kind: convTimeNanos}, `1000000001`))
	// MySQL TIME beyond a day and negative.
	assert.Equal(t, `"838:59:59"`, conv(t, fieldConv{kind: convTimeMicros}, strconv.FormatInt((838*3600+59*60+59)*1_000_000, 10)))
	assert.Equal(t, `"-01:00:00"`, conv(t, fieldConv{kind: convTimeMicros}, strconv.FormatInt(-3600*1_000_000, 10)))

	// ZonedTimestamp converts to the configured zone's wall clock.
	assert.Equal(t, `"2011-12-03 09:15:30.030431"`, conv(t, fieldConv{kind: convZoned}, `"2011-12-03T10:15:30.030431+01:00"`))
	assert.Equal(t, `"2011-12-03 10:15:30"`, conv(t, fieldConv{kind: convZoned}, `"2011-12-03T10:15:30Z"`))
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	out, err := valueWriter{loc: berlin}.convert(nil, fieldConv{kind: convZoned}, []byte(`"2011-12-03T10:15:30Z"`))
	require.NoError(t, err)
	assert.Equal(t, `"2011-12-03 11:15:30"`, string(out))
	// IsoDate: a date with an offset.
	assert.Equal(t, `"2023-11-21"`, conv(t, fieldConv{kind: convZoned}, `"2023-11-21Z"`))
	_, err = valueWriter{loc: time.UTC}.convert(nil, fieldConv{kind: convZoned}, []byte(`"yesterday"`))
	require.Error(t, err)
}

// Property: a timestamp in microseconds renders as DATETIME text that parses
// back to the same instant.
func TestTimestampProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		us := rapid.Int64Range(-62135596800000000+1, 253402300799999999).Draw(t, "us")
		out, err := valueWriter{loc: time.UTC}.convert(nil, fieldConv{kind: convTimestampUS}, []byte(strconv.FormatInt(us, 10)))
		if err != nil {
			t.Fatal(err)
		}
		var s string
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatal(err)
		}
		back, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			t.Fatalf("%s does not parse: %v", s, err)
		}
		if back.UnixMicro() != us {
			t.Fatalf("%d rendered %s, which is %d", us, s, back.UnixMicro())
		}
	})
}

func TestJSONValues(t *testing.T) {
	c := fieldConv{kind: convJSON}
	assert.Equal(t, `{"a":[1,2],"b":"x"}`, conv(t, c, `"{\"a\": [1, 2], \"b\": \"x\"}"`))
	assert.Equal(t, `"text"`, conv(t, c, `"\"text\""`))
	_, err := valueWriter{}.convert(nil, c, []byte(`"{not json"`))
	require.ErrorContains(t, err, "not valid JSON")
}

func TestPlanFromSchema(t *testing.T) {
	schema := `{"type":"struct","fields":[
	 {"type":"struct","optional":true,"name":"shop.test.orders.Value","field":"before","fields":[
	   {"type":"int64","optional":false,"field":"order_id"},
	   {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"total_amount"},
	   {"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1,"field":"updated_at"},
	   {"type":"boolean","optional":true,"field":"flag"}]},
	 {"type":"struct","optional":true,"name":"shop.test.orders.Value","field":"after","fields":[
	   {"type":"int64","optional":false,"field":"order_id"},
	   {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"total_amount"},
	   {"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1,"field":"updated_at"},
	   {"type":"boolean","optional":true,"field":"flag"}]},
	 {"type":"string","optional":false,"field":"op"}]}`
	p, err := planFromEnvelopeSchema([]byte(schema))
	require.NoError(t, err)
	assert.Equal(t, map[string]fieldConv{
		"total_amount": {kind: convDecimal, scale: 2},
		"updated_at":   {kind: convTimestampMS},
	}, p.convs)
	_, err = planFromEnvelopeSchema([]byte(`{"type":"struct","fields":[{"field":"after","type":"struct","fields":[{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","field":"x"}]}]}`))
	require.ErrorContains(t, err, "scale")
}
