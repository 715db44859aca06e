"""The exercise checkers' reports in Chinese: every English line, case label, hint and title -> 中文.

Message data, so it may grow past a module's usual size. ``check(name, fn, lang="zh")`` writes the
report in English and translates it line by line with this catalog (``i18n.Catalog``): the cases, the
numbers and the exception messages are the English report's own. tests/test_translations.py runs every
exercise with its solution, a stub and every mistake model in Chinese and fails on an untranslated
line, and on an entry that no report or exercise uses (a stale one).
"""

from __future__ import annotations

from ..i18n import Catalog
from .zh_learning import LEARNING_ZH
from .zh_part1 import PART1_ZH
from .zh_part2 import PART2_ZH

__all__ = ["EXERCISES_ZH"]

# the report's frame (exercises/__init__.py)
_REPORT = {
    "{name}: FAILED on case {n} of {total} ({label_t})": "{name}：第 {n} 个用例（共 {total} 个）未通过（{label_t}）",
    "{name}: not implemented yet: write `{fn}` above, then run this cell":
        "{name}：还没有实现：先在上面写好 `{fn}`，再运行这个单元格",
    "{name}: all {n} cases passed. Well done!": "{name}：全部 {n} 个用例都通过了。做得好！",
    "cases: {cases_l}": "用例：{cases_l}",
    "inputs: {inputs}": "输入：{inputs}",
    "{fn} raised {err}: {message}": "{fn} 抛出了 {err}：{message}",
    "hint: {hint_t}": "提示：{hint_t}",
    "NumPy warned: {warnings}": "NumPy 发出警告：{warnings}",
    "could not compare the answer with the expected one ({err})": "无法把你的答案与期望的答案比较（{err}）",
    "expected a tuple ({outputs}), got {what}": "期望返回一个元组 ({outputs})，实际得到 {what}",
    "expected a tuple ({outputs}), got a {kind} of {n}": "期望返回一个元组 ({outputs})，实际得到长度为 {n} 的 {kind}",
    "expected a tuple ({outputs}), got an array of shape {shape}": "期望返回一个元组 ({outputs})，实际得到形状为 {shape} 的数组",
    "{label}got None: did you forget to `return` the result?": "{label}得到 None：是不是忘了 `return` 结果？",
    "{label}expected an array, got {kind}": "{label}期望一个数组，实际得到 {kind}",
    "{label}expected shape {e}, got shape {g}": "{label}期望形状 {e}，实际形状 {g}",
    "{label}expected real numbers ({e}), got an array of dtype {g}": "{label}期望实数（{e}），实际得到 dtype 为 {g} 的数组",
    "{label}expected dtype {e}, got {g}": "{label}期望 dtype {e}，实际得到 {g}",
    "{label}first difference at index {index}: expected {e}, got {g} ({n} of {size} entries differ)":
        "{label}第一处不同在下标 {index}：期望 {e}，实际 {g}（{size} 个元素中有 {n} 个不同）",
    "{label}expected {value}": "{label}期望值 {value}",
    "{label}got      {value}": "{label}实际值 {value}",
    "{name} has nan where the answer is finite: look for inf - inf, 0/0 or exp overflow":
        "{name} 在答案为有限值的地方出现了 nan：检查是否有 inf - inf、0/0 或 exp 上溢",
    "check the signature: the checker calls {call}": "检查函数签名：检查器的调用方式是 {call}",
    "earlier cases passed, and this one has batch/head dimensions: x.T reverses every axis; swap only the last two "
    "with np.swapaxes(x, -1, -2), and reduce with axis=-1, keepdims=True":
        "前面的用例都通过了，而这个用例带有批/头维度：x.T 会反转所有轴；只交换最后两个轴，用 "
        "np.swapaxes(x, -1, -2)，归约时用 axis=-1, keepdims=True",
    "shapes do not line up: reduce with keepdims=True so the result broadcasts, and transpose only the last two axes":
        "形状对不上：归约时用 keepdims=True 让结果能广播，并且只转置最后两个轴",
    "return a boolean array (True = may attend), not numbers": "返回布尔数组（True = 可以关注），而不是数字",
    "{dtype} in, {dtype2} out: compute in the inputs' dtype (no cast to {other})":
        "输入 {dtype}，输出也应是 {dtype2}：按输入的 dtype 计算（不要转换成 {other}）",
    "your function changed its input {changed} in place": "你的函数原地修改了它的输入 {changed}",
    "the difference is below the 4 decimals shown: largest absolute error {err}, relative {rel} (the tolerance is "
    "{tol} relative to the largest expected value)":
        "差异小于所显示的 4 位小数：最大绝对误差 {err}，相对误差 {rel}（容差是相对于最大期望值的 {tol}）",
    "{label}expected dtype {e}, got a Python float (float64)": "{label}期望 dtype {e}，实际得到一个 Python float（float64）",
}

# texts of exercises in both parts of the course, and the runner's own (a wrong type, a failed comparison)
_SHARED = {
    "a (4, 5) matrix: one softmax per row": "一个 (4, 5) 矩阵：每行各做一次 Softmax",
    "batch and head dims (2, 3, 4, 6)": "带批和头维度 (2, 3, 4, 6)",
    "three tokens, d_k = 4, no mask": "三个 Token，d_k = 4，无掩码",
    "T = 2 queries, S = 5 keys, d_v = 3 ≠ d_k = 4": "T = 2 个查询，S = 5 个键，d_v = 3 ≠ d_k = 4",
    "batch and head dims (B, H, T, d_k) = (2, 3, 4, 8), S = 6": "带批和头维度 (B, H, T, d_k) = (2, 3, 4, 8)，S = 6",
    "a causal mask (True = may attend)": "因果掩码（True = 可以关注）",
    "one token": "只有一个 Token",
    "d_k = 1: (1, 4, 4), H = 4": "d_k = 1：(1, 4, 4)，H = 4",
    "overflow: exp of a huge score is inf, and inf/inf is nan. Did you subtract the row max before exp?":
        "上溢：巨大分数的 exp 是 inf，而 inf/inf 是 nan。做 exp 之前减去每行的最大值了吗？",
    "float32 in, float32 out: a NumPy float64 (np.sqrt of a Python int, np.zeros without dtype=, np.cos of float64 "
    "angles) promotes the result; Python numbers (d_k ** 0.5) do not, and .astype(x.dtype) casts back.":
        "输入 float32，输出也应是 float32：一个 NumPy float64（对 Python 整数求 np.sqrt、不带 dtype= 的 np.zeros、对 float64 角度求 "
        "np.cos）会把结果提升为 float64；Python 数（d_k ** 0.5）不会，而 .astype(x.dtype) 可以转换回来。",
    "computed in lower precision than the input? float64 in needs float64 all the way (no float32 or float16 step, "
    "no np.float32 constant)":
        "计算精度低于输入？输入 float64，就需要全程使用 float64（不要有 float32 或 float16 的中间步骤，也不要 np.float32 常数）",
    "work on new arrays: `x = x / s` makes a new one, while `x /= s`, `x[...] = ...`, `x.shape = ...` or out= write "
    "into the caller's array, which it may still need":
        "在新数组上计算：`x = x / s` 会创建一个新数组，而 `x /= s`、`x[...] = ...`、`x.shape = ...` 或 out= 会写入调用者的数组，"
        "调用者可能还要用它",
    "earlier cases passed, and this one has batch/head dimensions: x.T reverses every axis, so transpose only the "
    "last two; reductions need keepdims so that the result broadcasts back":
        "前面的用例都通过了，而这个用例带有批/头维度：x.T 会反转所有轴，所以只转置最后两个轴；归约时需要 keepdims，结果才能广播回去",
    "shapes do not line up: keep the reduced axis (keepdims) so the result broadcasts, and transpose only the last "
    "two axes":
        "形状对不上：保留被归约的轴（keepdims），让结果能够广播，并且只转置最后两个轴",
    "a blocked key whose score is about 1000 above the others": "一个被屏蔽的键，其分数比其他键高约 1000",
}

EXERCISES_ZH = Catalog({**_REPORT, **_SHARED, **PART1_ZH, **LEARNING_ZH, **PART2_ZH})
