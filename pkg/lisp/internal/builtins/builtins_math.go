package builtins

import (
	"math"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerMath registers the number builtins and the Math/ statics (with
// Java's result types), and the bit operations.
func registerMath(r *registry) {
	r.Add("mod", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return divOp(th, "mod", a[0], a[1]) }).
		doc("floored modulus: the sign of the divisor").ref(RefMath).pure().owns(2)
	r.Add("rem", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return divOp(th, "rem", a[0], a[1]) }).
		doc("remainder of truncating division: the sign of the dividend").ref(RefMath).pure().owns(2)
	r.Add("quot", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return divOp(th, "quot", a[0], a[1]) }).
		doc("quotient of truncating division").ref(RefMath).pure().owns(2)
	r.Add("num", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case int64, float64:
			return a[0]
		}
		th.TypeError("num", "number", a[0], 1)
		return nil
	}).doc("its argument, which must be a number").pure()
	r.Add("abs", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return absNum(th, "abs", a[0]) }).
		doc("absolute value").ref(RefMath).pure()
	r.Add("max", 1, -1, func(th *core.Thread, a []core.Value) core.Value { return extremum(th, "max", a, 1) }).
		doc("the largest number").ref(refAgg).pure()
	r.Add("min", 1, -1, func(th *core.Thread, a []core.Value) core.Value { return extremum(th, "min", a, -1) }).
		doc("the smallest number").ref(refAgg).pure()
	r.Add("floor", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return toIntegral(th, "floor", a[0], math.Floor) }).
		doc("the largest integer not above x, as an integer").ref(RefMath).pure()
	r.Add("ceil", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return toIntegral(th, "ceil", a[0], math.Ceil) }).
		doc("the smallest integer not below x, as an integer").ref(RefMath).pure()
	r.Add("trunc", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return toIntegral(th, "trunc", a[0], math.Trunc) }).
		doc("x with its fraction dropped, as an integer")
	r.Add("round", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 2 {
			// (round x places): a float rounded half away from zero.
			_, f, _ := th.Num("round", a[0], 1)
			p := th.Int("round", a[1], 2)
			if p < 0 || p > 15 || math.IsInf(f, 0) || math.IsNaN(f) {
				if p < 0 || p > 15 {
					th.Raise(core.KindValue, "round: decimal places must be between 0 and 15, got %d", p)
				}
				return f
			}
			s := math.Pow(10, float64(p))
			if g := math.Round(f*s) / s; !math.IsInf(g, 0) {
				return g
			}
			return f
		}
		return toIntegral(th, "round", a[0], math.Round)
	}).doc("x rounded half away from zero, as an integer; with places a float").ref(RefMath).pure()
	r.Add("sqrt", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		_, f, _ := th.Num("sqrt", a[0], 1)
		return math.Sqrt(f)
	}).doc("square root, as a float").pure()
	r.Add("pow", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		_, x, _ := th.Num("pow", a[0], 1)
		_, y, _ := th.Num("pow", a[1], 2)
		return math.Pow(x, y)
	}).doc("x to the power y, as a float").pure()
	r.Add("double", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return toDouble(th, "double", a[0]) }).
		doc("x as a float").pure()
	r.Add("float", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		v := toDouble(th, "float", a[0])
		// floats are 64-bit, but as Clojure a value past float's range
		// (an infinity too) is out of range
		if f := v.(float64); math.Abs(f) > math.MaxFloat32 {
			th.Raise(core.KindValue, "float: value out of range for float: %s", core.FormatFloat(f, 0))
		}
		return v
	}).
		doc("x as a float").pure()
	r.Add("int", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return toLong(th, "int", a[0]) }).
		doc("x truncated to an integer").pure()
	r.Add("long", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return toLong(th, "long", a[0]) }).
		doc("x truncated to an integer").pure()

	// Math/ statics: Java's overloads and result types.
	r.Add("Math/round", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		i, f, isF := th.Num("Math/round", a[0], 1)
		if !isF {
			return core.Int(i)
		}
		// Java: floor(x + 0.5), saturating; NaN → 0.
		switch {
		case math.IsNaN(f):
			return core.Int(0)
		case f >= 9.223372036854775807e18:
			return int64(math.MaxInt64)
		case f <= -9.223372036854775808e18:
			return int64(math.MinInt64)
		}
		r := math.Floor(f)
		if f-r >= 0.5 {
			r++
		}
		return core.Int(int64(r))
	}).doc("Java's Math.round: nearest integer, halves up").ref(RefMath)
	r.Add("Math/floor", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return math.Floor(toF(th, "Math/floor", a[0], 1)) }).
		doc("Java's Math.floor, as a float").ref(RefMath)
	r.Add("Math/ceil", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return math.Ceil(toF(th, "Math/ceil", a[0], 1)) }).
		doc("Java's Math.ceil, as a float").ref(RefMath)
	r.Add("Math/rint", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return math.RoundToEven(toF(th, "Math/rint", a[0], 1))
	}).
		doc("nearest integer as a float, halves to even")
	r.Add("Math/abs", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return absNum(th, "Math/abs", a[0]) }).
		doc("Java's Math.abs").ref(RefMath)
	r.Add("Math/max", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return extremum(th, "Math/max", a, 1) }).
		doc("the larger of two numbers")
	r.Add("Math/min", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return extremum(th, "Math/min", a, -1) }).
		doc("the smaller of two numbers")
	r.Add("Math/pow", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		x, y := toF(th, "Math/pow", a[0], 1), toF(th, "Math/pow", a[1], 2)
		if (math.IsNaN(y) || math.IsInf(y, 0)) && math.Abs(x) == 1 {
			return math.NaN() // Java: base ±1 to a NaN or infinite exponent (Go gives 1)
		}
		return math.Pow(x, y)
	}).doc("x to the power y").ref(RefMath)
	r.Add("Math/sqrt", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return math.Sqrt(toF(th, "Math/sqrt", a[0], 1)) }).
		doc("square root").ref(RefMath)
	r.Add("Math/cbrt", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return math.Cbrt(toF(th, "Math/cbrt", a[0], 1)) }).
		doc("cube root")
	r.Add("Math/exp", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return math.Exp(toF(th, "Math/exp", a[0], 1)) }).
		doc("e to the power x").ref(RefMath)
	r.Add("Math/log", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return math.Log(toF(th, "Math/log", a[0], 1)) }).
		doc("natural logarithm").ref(RefMath)
	r.Add("Math/log10", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return math.Log10(toF(th, "Math/log10", a[0], 1)) }).
		doc("base-10 logarithm").ref(RefMath)
	r.Add("Math/hypot", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return math.Hypot(toF(th, "Math/hypot", a[0], 1), toF(th, "Math/hypot", a[1], 2))
	}).doc("sqrt(x² + y²) without overflow")
	unary := func(name string, f func(float64) float64) core.BuiltinFunc {
		return func(th *core.Thread, a []core.Value) core.Value { return f(toF(th, name, a[0], 1)) }
	}
	r.Add("Math/sin", 1, 1, unary("Math/sin", math.Sin)).doc("sine of radians")
	r.Add("Math/cos", 1, 1, unary("Math/cos", math.Cos)).doc("cosine of radians")
	r.Add("Math/tan", 1, 1, unary("Math/tan", math.Tan)).doc("tangent of radians")
	r.Add("Math/asin", 1, 1, unary("Math/asin", math.Asin)).doc("arc sine, in radians")
	r.Add("Math/acos", 1, 1, unary("Math/acos", math.Acos)).doc("arc cosine, in radians")
	r.Add("Math/atan", 1, 1, unary("Math/atan", math.Atan)).doc("arc tangent, in radians")
	r.Add("Math/toRadians", 1, 1, unary("Math/toRadians", func(x float64) float64 { return x * math.Pi / 180 })).
		doc("degrees to radians")
	r.Add("Math/toDegrees", 1, 1, unary("Math/toDegrees", func(x float64) float64 { return x * 180 / math.Pi })).
		doc("radians to degrees")
	r.Add("Math/atan2", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return math.Atan2(toF(th, "Math/atan2", a[0], 1), toF(th, "Math/atan2", a[1], 2))
	}).doc("the angle of the point (x, y), in radians")
	// Java's floorDiv/floorMod on longs: floored, sign of the divisor.
	r.Add("Math/floorDiv", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		x, y := th.Int("Math/floorDiv", a[0], 1), th.Int("Math/floorDiv", a[1], 2)
		if y == 0 {
			th.Raise(core.KindArithmetic, "division by zero")
		}
		if x == math.MinInt64 && y == -1 {
			th.Overflow()
		}
		q := x / y
		if (x%y != 0) && ((x < 0) != (y < 0)) {
			q--
		}
		return core.Int(q)
	}).doc("floored integer division")
	r.Add("Math/floorMod", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		th.Int("Math/floorMod", a[0], 1)
		th.Int("Math/floorMod", a[1], 2)
		return divOp(th, "Math/floorMod", a[0], a[1])
	}).doc("floored integer modulus")
	r.Add("Math/signum", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		f := toF(th, "Math/signum", a[0], 1)
		switch {
		case f > 0:
			return 1.0
		case f < 0:
			return -1.0
		}
		return f // ±0.0 and NaN
	}).doc("-1.0, 0.0 or 1.0 by the sign of x").ref(RefMath)
	// Bit operations on 64-bit integers; shift counts and bit indexes
	// are taken modulo 64, as Java's long shifts do.
	r.Add("bit-and", 2, -1, bitFold("bit-and", func(x, y int64) int64 { return x & y })).
		doc("bitwise and of the integers").pure()
	r.Add("bit-or", 2, -1, bitFold("bit-or", func(x, y int64) int64 { return x | y })).
		doc("bitwise or of the integers").pure()
	r.Add("bit-xor", 2, -1, bitFold("bit-xor", func(x, y int64) int64 { return x ^ y })).
		doc("bitwise exclusive or of the integers").pure()
	r.Add("bit-and-not", 2, -1, bitFold("bit-and-not", func(x, y int64) int64 { return x &^ y })).
		doc("the first integer with the bits of the others cleared").pure()
	r.Add("bit-not", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return core.Int(^th.Int("bit-not", a[0], 1)) }).
		doc("bitwise complement").pure()
	r.Add("bit-shift-left", 2, 2, bitShift("bit-shift-left", func(x int64, n uint) int64 { return x << n })).
		doc("x shifted left by n bits").pure()
	r.Add("bit-shift-right", 2, 2, bitShift("bit-shift-right", func(x int64, n uint) int64 { return x >> n })).
		doc("x shifted right by n bits, keeping the sign").pure()
	r.Add("unsigned-bit-shift-right", 2, 2, bitShift("unsigned-bit-shift-right", func(x int64, n uint) int64 {
		return int64(uint64(x) >> n)
	})).doc("x shifted right by n bits, filling with zeros").pure()
	r.Add("bit-set", 2, 2, bitShift("bit-set", func(x int64, n uint) int64 { return x | 1<<n })).
		doc("x with bit n set").pure()
	r.Add("bit-clear", 2, 2, bitShift("bit-clear", func(x int64, n uint) int64 { return x &^ (1 << n) })).
		doc("x with bit n cleared").pure()
	r.Add("bit-flip", 2, 2, bitShift("bit-flip", func(x int64, n uint) int64 { return x ^ 1<<n })).
		doc("x with bit n flipped").pure()
	r.Add("bit-test", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		x, n := th.Int("bit-test", a[0], 1), th.Int("bit-test", a[1], 2)
		return x&(1<<(uint(n)&63)) != 0
	}).doc("true when bit n of x is set").pure()
}

// toF reads a number as float64 (Java's widening to double).
func toF(th *core.Thread, fn string, v core.Value, argN int) float64 {
	_, f, _ := th.Num(fn, v, argN)
	return f
}

// divOp implements quot (truncated), rem (sign of the dividend) and mod
// (floored, sign of the divisor). Integers stay integers; a float operand
// gives a float. A zero divisor is an arithmetic error, as in Clojure.
func divOp(th *core.Thread, fn string, a, b core.Value) core.Value {
	x, xf, xFloat := th.Num(fn, a, 1)
	y, yf, yFloat := th.Num(fn, b, 2)
	if !xFloat && !yFloat {
		if y == 0 {
			th.Raise(core.KindArithmetic, "division by zero")
		}
		if y == -1 {
			// MinInt64 / -1 overflows; the remainder is 0 for every x.
			if fn == "quot" {
				if x == math.MinInt64 {
					th.Overflow()
				}
				return core.Int(-x)
			}
			return core.Int(0)
		}
		switch fn {
		case "quot":
			return core.Int(x / y)
		case "rem":
			return core.Int(x % y)
		}
		m := x % y
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return core.Int(m)
	}
	if yf == 0 {
		th.Raise(core.KindArithmetic, "division by zero")
	}
	q := xf / yf
	if q-q != 0 {
		// NaN or infinite: Clojure takes the quotient through BigDecimal,
		// which has neither, so (mod ##NaN 2) and (quot ##Inf 2) throw
		th.Raise(core.KindArithmetic, "%s: the quotient of %s and %s is not finite", fn, core.PrStr(a), core.PrStr(b))
	}
	if fn == "quot" {
		// Clojure: (double)(long)(n/d) while it fits, so no -0.0
		if q >= -9.223372036854775808e18 && q <= 9.223372036854775807e18 {
			return float64(int64(q))
		}
		return math.Trunc(q)
	}
	// Clojure's double remainder: n - trunc(n/d)*d while the quotient fits
	// a long (so (rem 2 0.001) is 0.0, not fmod's 0.000999...).
	var m float64
	if q >= -9.223372036854775808e18 && q <= 9.223372036854775807e18 {
		m = xf - float64(int64(q))*yf
	} else {
		m = math.Mod(xf, yf)
	}
	if fn == "rem" || m == 0 || (xf > 0) == (yf > 0) {
		return m
	}
	return m + yf
}

func absNum(th *core.Thread, fn string, v core.Value) core.Value {
	i, f, isF := th.Num(fn, v, 1)
	if isF {
		return math.Abs(f)
	}
	if i < 0 {
		if i == math.MinInt64 {
			th.Overflow()
		}
		return core.Int(-i)
	}
	return v
}

// extremum returns the greatest (dir 1) or least (dir -1) argument itself,
// keeping its type as Clojure does; any NaN makes the result NaN.
func extremum(th *core.Thread, fn string, a []core.Value, dir int) core.Value {
	best := num(th, fn, a[0], 1)
	nan := core.IsNaN(best)
	for i := 1; i < len(a); i++ {
		th.Tick()
		v := num(th, fn, a[i], i+1)
		if core.IsNaN(v) {
			nan = true
			continue
		}
		if c := core.NumCmp(v, best); c*dir >= 0 { // ties: the later arg, as in Clojure
			best = v
		}
	}
	if nan {
		return math.NaN()
	}
	return best
}

// toIntegral applies op (floor, ceil, round half away from zero, trunc)
// and returns an integer; Inf and NaN pass through; a float beyond the
// int64 range is an integer overflow.
func toIntegral(th *core.Thread, fn string, v core.Value, op func(float64) float64) core.Value {
	i, f, isF := th.Num(fn, v, 1)
	if !isF {
		return core.Int(i)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return f
	}
	g := op(f)
	if g >= 9.223372036854775807e18 || g < -9.223372036854775808e18 {
		th.Overflow()
	}
	return core.Int(int64(g))
}

func toDouble(th *core.Thread, fn string, v core.Value) core.Value {
	i, _, isF := th.Num(fn, v, 1)
	if isF {
		return v
	}
	return float64(i)
}

// toLong truncates toward zero; Inf, NaN and out-of-range floats are
// errors (Clojure's (int ##NaN) is 0).
func toLong(th *core.Thread, fn string, v core.Value) core.Value {
	switch x := v.(type) {
	case int64:
		return v
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			th.Raise(core.KindArithmetic, "%s: cannot convert %s to an integer", fn, core.FormatFloat(x, 0))
		}
		t := math.Trunc(x)
		if t >= 9.223372036854775807e18 || t < -9.223372036854775808e18 {
			th.Raise(core.KindArithmetic, "%s: value out of range: %s", fn, core.FormatFloat(x, 0))
		}
		return core.Int(int64(t))
	case string:
		th.RaiseHint(core.KindType, "use parse-long or parse-double to read a number from a string",
			"%s: expected number, got %s (arg 1)", fn, core.ErrorPreview(v))
	}
	th.TypeError(fn, "number", v, 1)
	return nil
}

// bitFold folds the integer arguments with op.
func bitFold(name string, op func(x, y int64) int64) core.BuiltinFunc {
	return func(th *core.Thread, a []core.Value) core.Value {
		acc := th.Int(name, a[0], 1)
		for i, v := range a[1:] {
			acc = op(acc, th.Int(name, v, i+2))
		}
		return core.Int(acc)
	}
}

// bitShift applies op to the integer x and the count n modulo 64.
func bitShift(name string, op func(x int64, n uint) int64) core.BuiltinFunc {
	return func(th *core.Thread, a []core.Value) core.Value {
		x, n := th.Int(name, a[0], 1), th.Int(name, a[1], 2)
		return core.Int(op(x, uint(n)&63))
	}
}
