;; format: java.util.Formatter syntax and output, checked against Clojure 1.11
[(format "%s %d" "a" 5) (format "%d%%" 50) (format "a%nb") (format "no args")]
;=> ["a 5" "50%" "a\nb" "no args"]
---
;; %f rounds HALF_UP from the shortest decimal form, like Java (not like C)
[(format "%.2f" 2.675) (format "%.1f" 0.15) (format "%.0f" 2.5) (format "%.0f" 0.5) (format "%.0f" 0.4) (format "%.2f" 0.995) (format "%.2f" 99.995) (format "%.3f" 0.0005) (format "%.1f" 1e-10)]
;=> ["2.68" "0.2" "3" "1" "0" "1.00" "100.00" "0.001" "0.0"]
---
[(format "%f" 3.14159265) (format "%.2f" -0.001) (format "%.2f" 1e20) (format "%10.4f|" 3.14159) (format "%08.2f" -3.14159) (format "%+.1f" 2.0) (format "%,.2f" 1234567.891) (format "%(,.2f" -1234.5)]
;=> ["3.141593" "-0.00" "100000000000000000000.00" "    3.1416|" "-0003.14" "+2.0" "1,234,567.89" "(1,234.50)"]
---
;; unlike Java, %f accepts an integer and %d an integral float (Java throws)
[(format "%.2f" 3) (format "%d" 3.0) (format "%.1f" (/ 10 4))]
;=> ["3.00" "3" "2.5"]
---
(format "%d" 2.5)
;;; "value_error: 1:1: format: %d expects an integer, got 2.5\n(?s:.*)hint: use %.2f for floats"
---
[(format "%.2f" ##Inf) (format "%5.1f" ##NaN) (format "%f" ##-Inf)]
;=> ["Infinity" "  NaN" "-Infinity"]
---
[(format "%e" 12345.678) (format "%.2e" 0.000123) (format "%.0e" 15.0) (format "%e" 0.0) (format "%.3e" 9.9996) (format "%E" 1.5)]
;=> ["1.234568e+04" "1.23e-04" "2e+01" "0.000000e+00" "1.000e+01" "1.500000E+00"]
---
[(format "%g" 12345.678) (format "%g" 0.0001234) (format "%.3g" 1234567.0) (format "%g" 0.0) (format "%g" 0.00001) (format "%g" 100000.0) (format "%g" 1000000.0) (format "%g" 99999.95) (format "%.2g" 0.000099)]
;=> ["12345.7" "0.000123400" "1.23e+06" "0.00000" "1.00000e-05" "100000" "1.00000e+06" "100000" "9.9e-05"]
---
[(format "%5d|" 42) (format "%-10d|" 42) (format "%05d" -42) (format "%03d" 7) (format "%+d" 5) (format "% d" 5) (format "%(d" -5) (format "%,d" 1234567) (format "%,d" -1234)]
;=> ["   42|" "42        |" "-0042" "007" "+5" " 5" "(5)" "1,234,567" "-1,234"]
---
[(format "%x" 255) (format "%X" 255) (format "%x" -1) (format "%o" 8) (format "%#x" 255) (format "%08X" 255) (format "%d" -9223372036854775808)]
;=> ["ff" "FF" "ffffffffffffffff" "10" "0xff" "000000FF" "-9223372036854775808"]
---
;; %s prints like str (collections readably), nil as null
[(format "%s" nil) (format "%s %s %s" :a [1 "b" nil] {:a 1}) (format "%s" 1.0E21) (format "%s" 1.5) (format "%S" "abc") (format "%.5s" nil)]
;=> ["null" ":a [1 \"b\" nil] {:a 1}" "1.0E21" "1.5" "ABC" "null"]
---
[(format "|%10.3s|" "abcdef") (format "|%-8s|" "ab") (format "%5s|" :a) (format "|%3s|" "héllo") (format "|%-4s|" "é")]
;=> ["|       abc|" "|ab      |" "   :a|" "|héllo|" "|é   |"]
---
[(format "%b %b %b" nil false 0) (format "%-6b|" true) (format "%c" 65) (format "%c" "z") (format "%C" "a")]
;=> ["false false true" "true  |" "A" "z" "A"]
---
;; explicit indexes and %<
[(format "%2$s %1$s" "a" "b") (format "%s %<s" "x") (format "%1$s-%1$s" 7)]
;=> ["b a" "x x" "7-7"]
---
;; extra arguments are ignored, as in Java
(format "%s" 1 2)
;=> "1"
---
(format "%s %s" 1)
;;; "value_error: 1:1: format: missing argument for %s \\(1 given\\)"
---
(format "%q" 1)
;;; "value_error: 1:1: format: unknown conversion \"q\" in %q"
---
(format "100%")
;;; "value_error: 1:1: format: incomplete format specifier"
---
(format "%.f" 1.0)
;;; "value_error: 1:1: format: missing precision"
---
(format "%x" 1.5)
;;; "value_error: 1:1: format: %x expects an integer, got 1.5"
---
(format "%f" "1.5")
;;; "value_error: 1:1: format: %f expects a number, got string \"1.5\""
---
(format "%c" "ab")
;;; "value_error: 1:1: format: %c expects a character"
---
(format nil)
;;; "type_error: 1:1: format: expected string, got nil \\(arg 1\\)"
---
(format)
;;; "arity_error: 1:1: format expects 1 or more args, got 0"
---
(format "%999999999d" 1)
;;; "value_error: 1:1: format: width or precision too large"
---
;; report lines
;; @ctx {"rows": [{"name": "ann", "total": 1234.5}, {"name": "bob", "total": 7}]}
(map #(format "%-5s|%8.2f" (:name %) (:total %)) ctx/rows)
;=> ["ann  | 1234.50" "bob  |    7.00"]
---
;; '0' pads after the sign or the 0x prefix
[(format "%#08x" 255) (format "%08o" 8) (format "%+08.2f" 3.14159) (format "%,015.2f" 1234567.891) (format "%-5d|" -3) (format "%.3s" "héllo") (format "%10.2e|" 12345.0)]
;=> ["0x0000ff" "00000010" "+0003.14" "0001,234,567.89" "-3   |" "hél" "  1.23e+04|"]
---
;; precision past the shortest digits pads zeros, as Java
[(format "%.15g" 0.1) (format "%.20f" 0.1) (format "%.17f" 1.0E-10)]
;=> ["0.100000000000000" "0.10000000000000000000" "0.00000000010000000"]
---
(format "%-08d" 5)
;;; "value_error: 1:1: format: flags - and 0 cannot be combined in %-08d"
---
;; '#' keeps the decimal point at precision 0
[(format "%#1.0f" 99.995) (format "%#.0E" 123456.789) (format "%#.0f" 2.0)]
;=> ["100." "1.E+05" "2."]
---
(format "%d" "5")
;;; "value_error: 1:1: format: %d expects an integer, got string \"5\"\n  \\(format"
