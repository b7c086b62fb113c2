package lisp

import (
	"math"
)

// registerMath registers the number builtins and the Math/ statics (with
// Java's result types), and the bit operations.
func registerMath(r *registry) {
	r.add("mod", 2, 2, func(th *Thread, a []Value) Value { return divOp(th, "mod", a[0], a[1]) }).
		doc("floored modulus: the sign of the divisor").ref(refMath).pure().owns(2)
	r.add("rem", 2, 2, func(th *Thread, a []Value) Value { return divOp(th, "rem", a[0], a[1]) }).
		doc("remainder of truncating division: the sign of the dividend").ref(refMath).pure().owns(2)
	r.add("quot", 2, 2, func(th *Thread, a []Value) Value { return divOp(th, "quot", a[0], a[1]) }).
		doc("quotient of truncating division").ref(refMath).pure().owns(2)
	r.add("abs", 1, 1, func(th *Thread, a []Value) Value { return absNum(th, "abs", a[0]) }).
		doc("absolute value").ref(refMath).pure()
	r.add("max", 1, -1, func(th *Thread, a []Value) Value { return extremum(th, "max", a, 1) }).
		doc("the largest number").ref(refAgg).pure()
	r.add("min", 1, -1, func(th *Thread, a []Value) Value { return extremum(th, "min", a, -1) }).
		doc("the smallest number").ref(refAgg).pure()
	r.add("floor", 1, 1, func(th *Thread, a []Value) Value { return toIntegral(th, "floor", a[0], math.Floor) }).
		doc("the largest integer not above x, as an integer").ref(refMath).pure()
	r.add("ceil", 1, 1, func(th *Thread, a []Value) Value { return toIntegral(th, "ceil", a[0], math.Ceil) }).
		doc("the smallest integer not below x, as an integer").ref(refMath).pure()
	r.add("trunc", 1, 1, func(th *Thread, a []Value) Value { return toIntegral(th, "trunc", a[0], math.Trunc) }).
		doc("x with its fraction dropped, as an integer")
	r.add("round", 1, 2, func(th *Thread, a []Value) Value {
		if len(a) == 2 {
			// (round x places): a float rounded half away from zero.
			_, f, _ := th.Num("round", a[0], 1)
			p := th.Int("round", a[1], 2)
			if p < 0 || p > 15 || math.IsInf(f, 0) || math.IsNaN(f) {
				if p < 0 || p > 15 {
					th.Raise(KindValue, "round: decimal places must be between 0 and 15, got %d", p)
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
	}).doc("x rounded half away from zero, as an integer; with places a float").ref(refMath).pure()
	r.add("sqrt", 1, 1, func(th *Thread, a []Value) Value {
		_, f, _ := th.Num("sqrt", a[0], 1)
		return math.Sqrt(f)
	}).doc("square root, as a float").pure()
	r.add("pow", 2, 2, func(th *Thread, a []Value) Value {
		_, x, _ := th.Num("pow", a[0], 1)
		_, y, _ := th.Num("pow", a[1], 2)
		return math.Pow(x, y)
	}).doc("x to the power y, as a float").pure()
	r.add("double", 1, 1, func(th *Thread, a []Value) Value { return toDouble(th, "double", a[0]) }).
		doc("x as a float").pure()
	r.add("float", 1, 1, func(th *Thread, a []Value) Value {
		v := toDouble(th, "float", a[0])
		// floats are 64-bit, but as Clojure a value past float's range
		// (an infinity too) is out of range
		if f := v.(float64); math.Abs(f) > math.MaxFloat32 {
			th.Raise(KindValue, "float: value out of range for float: %s", formatFloat(f, 0))
		}
		return v
	}).
		doc("x as a float").pure()
	r.add("int", 1, 1, func(th *Thread, a []Value) Value { return toLong(th, "int", a[0]) }).
		doc("x truncated to an integer").pure()
	r.add("long", 1, 1, func(th *Thread, a []Value) Value { return toLong(th, "long", a[0]) }).
		doc("x truncated to an integer").pure()

	// Math/ statics: Java's overloads and result types.
	r.add("Math/round", 1, 1, func(th *Thread, a []Value) Value {
		i, f, isF := th.Num("Math/round", a[0], 1)
		if !isF {
			return Int(i)
		}
		// Java: floor(x + 0.5), saturating; NaN → 0.
		switch {
		case math.IsNaN(f):
			return Int(0)
		case f >= 9.223372036854775807e18:
			return int64(math.MaxInt64)
		case f <= -9.223372036854775808e18:
			return int64(math.MinInt64)
		}
		r := math.Floor(f)
		if f-r >= 0.5 {
			r++
		}
		return Int(int64(r))
	}).doc("Java's Math.round: nearest integer, halves up").ref(refMath)
	r.add("Math/floor", 1, 1, func(th *Thread, a []Value) Value { return math.Floor(toF(th, "Math/floor", a[0], 1)) }).
		doc("Java's Math.floor, as a float").ref(refMath)
	r.add("Math/ceil", 1, 1, func(th *Thread, a []Value) Value { return math.Ceil(toF(th, "Math/ceil", a[0], 1)) }).
		doc("Java's Math.ceil, as a float").ref(refMath)
	r.add("Math/rint", 1, 1, func(th *Thread, a []Value) Value { return math.RoundToEven(toF(th, "Math/rint", a[0], 1)) }).
		doc("nearest integer as a float, halves to even")
	r.add("Math/abs", 1, 1, func(th *Thread, a []Value) Value { return absNum(th, "Math/abs", a[0]) }).
		doc("Java's Math.abs").ref(refMath)
	r.add("Math/max", 2, 2, func(th *Thread, a []Value) Value { return extremum(th, "Math/max", a, 1) }).
		doc("the larger of two numbers")
	r.add("Math/min", 2, 2, func(th *Thread, a []Value) Value { return extremum(th, "Math/min", a, -1) }).
		doc("the smaller of two numbers")
	r.add("Math/pow", 2, 2, func(th *Thread, a []Value) Value {
		x, y := toF(th, "Math/pow", a[0], 1), toF(th, "Math/pow", a[1], 2)
		if (math.IsNaN(y) || math.IsInf(y, 0)) && math.Abs(x) == 1 {
			return math.NaN() // Java: base ±1 to a NaN or infinite exponent (Go gives 1)
		}
		return math.Pow(x, y)
	}).doc("x to the power y").ref(refMath)
	r.add("Math/sqrt", 1, 1, func(th *Thread, a []Value) Value { return math.Sqrt(toF(th, "Math/sqrt", a[0], 1)) }).
		doc("square root").ref(refMath)
	r.add("Math/cbrt", 1, 1, func(th *Thread, a []Value) Value { return math.Cbrt(toF(th, "Math/cbrt", a[0], 1)) }).
		doc("cube root")
	r.add("Math/exp", 1, 1, func(th *Thread, a []Value) Value { return math.Exp(toF(th, "Math/exp", a[0], 1)) }).
		doc("e to the power x").ref(refMath)
	r.add("Math/log", 1, 1, func(th *Thread, a []Value) Value { return math.Log(toF(th, "Math/log", a[0], 1)) }).
		doc("natural logarithm").ref(refMath)
	r.add("Math/log10", 1, 1, func(th *Thread, a []Value) Value { return math.Log10(toF(th, "Math/log10", a[0], 1)) }).
		doc("base-10 logarithm").ref(refMath)
	r.add("Math/hypot", 2, 2, func(th *Thread, a []Value) Value {
		return math.Hypot(toF(th, "Math/hypot", a[0], 1), toF(th, "Math/hypot", a[1], 2))
	}).doc("sqrt(x² + y²) without overflow")
	unary := func(name string, f func(float64) float64) BuiltinFunc {
		return func(th *Thread, a []Value) Value { return f(toF(th, name, a[0], 1)) }
	}
	r.add("Math/sin", 1, 1, unary("Math/sin", math.Sin)).doc("sine of radians")
	r.add("Math/cos", 1, 1, unary("Math/cos", math.Cos)).doc("cosine of radians")
	r.add("Math/tan", 1, 1, unary("Math/tan", math.Tan)).doc("tangent of radians")
	r.add("Math/asin", 1, 1, unary("Math/asin", math.Asin)).doc("arc sine, in radians")
	r.add("Math/acos", 1, 1, unary("Math/acos", math.Acos)).doc("arc cosine, in radians")
	r.add("Math/atan", 1, 1, unary("Math/atan", math.Atan)).doc("arc tangent, in radians")
	r.add("Math/toRadians", 1, 1, unary("Math/toRadians", func(x float64) float64 { return x * math.Pi / 180 })).
		doc("degrees to radians")
	r.add("Math/toDegrees", 1, 1, unary("Math/toDegrees", func(x float64) float64 { return x * 180 / math.Pi })).
		doc("radians to degrees")
	r.add("Math/atan2", 2, 2, func(th *Thread, a []Value) Value {
		return math.Atan2(toF(th, "Math/atan2", a[0], 1), toF(th, "Math/atan2", a[1], 2))
	}).doc("the angle of the point (x, y), in radians")
	// Java's floorDiv/floorMod on longs: floored, sign of the divisor.
	r.add("Math/floorDiv", 2, 2, func(th *Thread, a []Value) Value {
		x, y := th.Int("Math/floorDiv", a[0], 1), th.Int("Math/floorDiv", a[1], 2)
		if y == 0 {
			th.Raise(KindArithmetic, "division by zero")
		}
		if x == math.MinInt64 && y == -1 {
			th.overflow()
		}
		q := x / y
		if (x%y != 0) && ((x < 0) != (y < 0)) {
			q--
		}
		return Int(q)
	}).doc("floored integer division")
	r.add("Math/floorMod", 2, 2, func(th *Thread, a []Value) Value {
		th.Int("Math/floorMod", a[0], 1)
		th.Int("Math/floorMod", a[1], 2)
		return divOp(th, "Math/floorMod", a[0], a[1])
	}).doc("floored integer modulus")
	r.add("Math/signum", 1, 1, func(th *Thread, a []Value) Value {
		f := toF(th, "Math/signum", a[0], 1)
		switch {
		case f > 0:
			return 1.0
		case f < 0:
			return -1.0
		}
		return f // ±0.0 and NaN
	}).doc("-1.0, 0.0 or 1.0 by the sign of x").ref(refMath)
	// Bit operations on 64-bit integers; shift counts and bit indexes
	// are taken modulo 64, as Java's long shifts do.
	r.add("bit-and", 2, -1, bitFold("bit-and", func(x, y int64) int64 { return x & y })).
		doc("bitwise and of the integers").pure()
	r.add("bit-or", 2, -1, bitFold("bit-or", func(x, y int64) int64 { return x | y })).
		doc("bitwise or of the integers").pure()
	r.add("bit-xor", 2, -1, bitFold("bit-xor", func(x, y int64) int64 { return x ^ y })).
		doc("bitwise exclusive or of the integers").pure()
	r.add("bit-and-not", 2, -1, bitFold("bit-and-not", func(x, y int64) int64 { return x &^ y })).
		doc("the first integer with the bits of the others cleared").pure()
	r.add("bit-not", 1, 1, func(th *Thread, a []Value) Value { return Int(^th.Int("bit-not", a[0], 1)) }).
		doc("bitwise complement").pure()
	r.add("bit-shift-left", 2, 2, bitShift("bit-shift-left", func(x int64, n uint) int64 { return x << n })).
		doc("x shifted left by n bits").pure()
	r.add("bit-shift-right", 2, 2, bitShift("bit-shift-right", func(x int64, n uint) int64 { return x >> n })).
		doc("x shifted right by n bits, keeping the sign").pure()
	r.add("unsigned-bit-shift-right", 2, 2, bitShift("unsigned-bit-shift-right", func(x int64, n uint) int64 {
		return int64(uint64(x) >> n)
	})).doc("x shifted right by n bits, filling with zeros").pure()
	r.add("bit-set", 2, 2, bitShift("bit-set", func(x int64, n uint) int64 { return x | 1<<n })).
		doc("x with bit n set").pure()
	r.add("bit-clear", 2, 2, bitShift("bit-clear", func(x int64, n uint) int64 { return x &^ (1 << n) })).
		doc("x with bit n cleared").pure()
	r.add("bit-flip", 2, 2, bitShift("bit-flip", func(x int64, n uint) int64 { return x ^ 1<<n })).
		doc("x with bit n flipped").pure()
	r.add("bit-test", 2, 2, func(th *Thread, a []Value) Value {
		x, n := th.Int("bit-test", a[0], 1), th.Int("bit-test", a[1], 2)
		return x&(1<<(uint(n)&63)) != 0
	}).doc("true when bit n of x is set").pure()
}

// toF reads a number as float64 (Java's widening to double).
func toF(th *Thread, fn string, v Value, argN int) float64 {
	_, f, _ := th.Num(fn, v, argN)
	return f
}

// divOp implements quot (truncated), rem (sign of the dividend) and mod
// (floored, sign of the divisor). Integers stay integers; a float operand
// gives a float. A zero divisor is an arithmetic error, as in Clojure.
func divOp(th *Thread, fn string, a, b Value) Value {
	x, xf, xFloat := th.Num(fn, a, 1)
	y, yf, yFloat := th.Num(fn, b, 2)
	if !xFloat && !yFloat {
		if y == 0 {
			th.Raise(KindArithmetic, "division by zero")
		}
		if y == -1 {
			// MinInt64 / -1 overflows; the remainder is 0 for every x.
			if fn == "quot" {
				if x == math.MinInt64 {
					th.overflow()
				}
				return Int(-x)
			}
			return Int(0)
		}
		switch fn {
		case "quot":
			return Int(x / y)
		case "rem":
			return Int(x % y)
		}
		m := x % y
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return Int(m)
	}
	if yf == 0 {
		th.Raise(KindArithmetic, "division by zero")
	}
	q := xf / yf
	if q-q != 0 {
		// NaN or infinite: Clojure takes the quotient through BigDecimal,
		// which has neither, so (mod ##NaN 2) and (quot ##Inf 2) throw
		th.Raise(KindArithmetic, "%s: the quotient of %s and %s is not finite", fn, PrStr(a), PrStr(b))
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

func absNum(th *Thread, fn string, v Value) Value {
	i, f, isF := th.Num(fn, v, 1)
	if isF {
		return math.Abs(f)
	}
	if i < 0 {
		if i == math.MinInt64 {
			th.overflow()
		}
		return Int(-i)
	}
	return v
}

// extremum returns the greatest (dir 1) or least (dir -1) argument itself,
// keeping its type as Clojure does; any NaN makes the result NaN.
func extremum(th *Thread, fn string, a []Value, dir int) Value {
	best := num(th, fn, a[0], 1)
	nan := isNaN(best)
	for i := 1; i < len(a); i++ {
		th.tick()
		v := num(th, fn, a[i], i+1)
		if isNaN(v) {
			nan = true
			continue
		}
		if c := numCmp(v, best); c*dir >= 0 { // ties: the later arg, as in Clojure
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
func toIntegral(th *Thread, fn string, v Value, op func(float64) float64) Value {
	i, f, isF := th.Num(fn, v, 1)
	if !isF {
		return Int(i)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return f
	}
	g := op(f)
	if g >= 9.223372036854775807e18 || g < -9.223372036854775808e18 {
		th.overflow()
	}
	return Int(int64(g))
}

func toDouble(th *Thread, fn string, v Value) Value {
	i, _, isF := th.Num(fn, v, 1)
	if isF {
		return v
	}
	return float64(i)
}

// toLong truncates toward zero; Inf, NaN and out-of-range floats are
// errors (Clojure's (int ##NaN) is 0).
func toLong(th *Thread, fn string, v Value) Value {
	switch x := v.(type) {
	case int64:
		return v
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			th.Raise(KindArithmetic, "%s: cannot convert %s to an integer", fn, formatFloat(x, 0))
		}
		t := math.Trunc(x)
		if t >= 9.223372036854775807e18 || t < -9.223372036854775808e18 {
			th.Raise(KindArithmetic, "%s: value out of range: %s", fn, formatFloat(x, 0))
		}
		return Int(int64(t))
	case string:
		th.RaiseHint(KindType, "use parse-long or parse-double to read a number from a string",
			"%s: expected number, got %s (arg 1)", fn, preview(v))
	}
	th.TypeError(fn, "number", v, 1)
	return nil
}

// bitFold folds the integer arguments with op.
func bitFold(name string, op func(x, y int64) int64) BuiltinFunc {
	return func(th *Thread, a []Value) Value {
		acc := th.Int(name, a[0], 1)
		for i, v := range a[1:] {
			acc = op(acc, th.Int(name, v, i+2))
		}
		return Int(acc)
	}
}

// bitShift applies op to the integer x and the count n modulo 64.
func bitShift(name string, op func(x int64, n uint) int64) BuiltinFunc {
	return func(th *Thread, a []Value) Value {
		x, n := th.Int(name, a[0], 1), th.Int(name, a[1], 2)
		return Int(op(x, uint(n)&63))
	}
}
