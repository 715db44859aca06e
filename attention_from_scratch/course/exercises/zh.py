"""The exercise checkers' reports in Chinese: every English line, case label, hint and title -> 中文.

Message data, so it may grow past a module's usual size. ``check(name, fn, lang="zh")`` writes the
report in English and translates it line by line with this catalog (``i18n.Catalog``): the cases, the
numbers and the exception messages are the English report's own. tests/test_translations.py runs every
exercise with its solution, a stub and every mistake model in Chinese and fails on an untranslated
line, and on an entry that no report or exercise uses (a stale one).
"""

from __future__ import annotations

from ..i18n import Catalog

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
    "float32 in, float32 out: a NumPy float64 (np.sqrt(d_k), np.zeros without dtype=, np.cos of float64 angles) "
    "promotes the result; use d_k ** 0.5, or cast with .astype(x.dtype)":
        "输入 float32，输出也应是 float32：一个 NumPy float64（np.sqrt(d_k)、不带 dtype= 的 np.zeros、对 float64 "
        "角度求 np.cos）会把结果提升为 float64；改用 d_k ** 0.5，或用 .astype(x.dtype) 转换",
    "return a boolean array (True = may attend), not numbers": "返回布尔数组（True = 可以关注），而不是数字",
    "{dtype} in, {dtype2} out: compute in the inputs' dtype (no .astype({other}), no dtype=...)":
        "输入 {dtype}，输出也应是 {dtype2}：按输入的 dtype 计算（不要 .astype({other})，也不要 dtype=...）",
}

# the exercises' titles (the notebooks' "Write it yourself" sections)
_TITLES = {
    "a stable softmax": "数值稳定的 Softmax",
    "scaled dot-product attention": "缩放点积注意力",
    "the causal mask, bottom-right aligned": "右下角对齐的因果掩码",
    "split and merge heads": "拆分与合并注意力头",
    "one decoding step with a KV cache": "用键值缓存解码一步",
    "the RoPE rotation": "RoPE 旋转",
    "the absorbed MLA score": "吸收权重后的 MLA 分数",
    "the online-softmax merge": "在线 Softmax 的合并",
    "the InfoNCE loss": "InfoNCE 损失",
}

# the cases' labels
_LABELS = {
    "one row [1, 2, 3]": "一行 [1, 2, 3]",
    "a (4, 5) matrix: one softmax per row": "一个 (4, 5) 矩阵：每行各做一次 Softmax",
    "batch and head dims (2, 3, 4, 6)": "带批和头维度 (2, 3, 4, 6)",
    "huge scores [1000, 999, 0]": "巨大的分数 [1000, 999, 0]",
    "rows of very different sizes": "各行数值大小相差悬殊",
    "−∞ entries (masked keys)": "含 −∞ 的元素（被掩码的键）",
    "a single score": "只有一个分数",
    "three tokens, d_k = 4, no mask": "三个 Token，d_k = 4，无掩码",
    "T = 2 queries, S = 5 keys, d_v = 3 ≠ d_k = 4": "T = 2 个查询，S = 5 个键，d_v = 3 ≠ d_k = 4",
    "batch and head dims (B, H, T, d_k) = (2, 3, 4, 8), S = 6": "带批和头维度 (B, H, T, d_k) = (2, 3, 4, 8)，S = 6",
    "a causal mask (True = may attend)": "因果掩码（True = 可以关注）",
    "a fully masked row (query 1 sees no key)": "整行被掩码（查询 1 看不到任何键）",
    "large scores (entries of q and k about 30)": "较大的分数（q 和 k 的元素约为 30）",
    "one token": "只有一个 Token",
    "one new token against S = 6 keys (decoding)": "一个新 Token 对 S = 6 个键（解码）",
    "T = 3 new tokens against S = 7 keys": "T = 3 个新 Token 对 S = 7 个键",
    "more queries than keys: T = 5, S = 3": "查询比键多：T = 5，S = 3",
    "one head: (2, 3, 8), H = 1": "只有一个头：(2, 3, 8)，H = 1",
    "d_k = 1: (1, 4, 4), H = 4": "d_k = 1：(1, 4, 4)，H = 4",
    "one token: (1, 1, 8), H = 4": "只有一个 Token：(1, 1, 8)，H = 4",
    "(B, H) = (1, 2), S = 3 cached tokens, d_k = d_v = 4": "(B, H) = (1, 2)，已缓存 S = 3 个 Token，d_k = d_v = 4",
    "the first token: an empty cache, S = 0": "第一个 Token：缓存为空，S = 0",
    "large scores (entries about 30)": "较大的分数（元素约为 30）",
    "one pair at position 1": "位置 1 上的一对特征",
    "(T, d) = (4, 8), positions 0..3": "(T, d) = (4, 8)，位置 0..3",
    "batch and head dims (2, 3, 5, 16), positions 7..11": "带批和头维度 (2, 3, 5, 16)，位置 7..11",
    "float32 (3, 6), positions 0..2": "float32 (3, 6)，位置 0..2",
    "one token at position 100, d = 4": "位置 100 上的一个 Token，d = 4",
    "one new token (decoding): (2, 3, 1, 7)": "一个新 Token（解码）：(2, 3, 1, 7)",
    "one head, d_c = 8 > d_h = 3": "只有一个头，d_c = 8 > d_h = 3",
    "one row, blocks of 3 and 4 keys": "一行，两块分别有 3 个和 4 个键",
    "3 rows, blocks of 4 and 5 keys, d_v = 2": "3 行，两块分别有 4 个和 5 个键，d_v = 2",
    "batch and head dims (2, 3), T = 4": "带批和头维度 (2, 3)，T = 4",
    "huge scores: block maxima about 1000 and 990": "巨大的分数：两块的最大值约为 1000 和 990",
    "the second block is empty (fully masked: m = −∞, l = 0, acc = 0)": "第二块为空（全部被掩码：m = −∞，l = 0，acc = 0）",
    "both blocks empty (a row that sees no key yet)": "两块都为空（这一行还看不到任何键）",
    "N = 4 pairs, d = 8, τ = 1": "N = 4 对，d = 8，τ = 1",
    "unit vectors, τ = 0.001: logits up to 1000": "单位向量，τ = 0.001：logits 最大可达 1000",
    "one pair (N = 1)": "只有一对（N = 1）",
}

# the hints of the mistake models and symptom checks (exercises/*.py)
_HINTS = {
    "overflow: exp of a huge score is inf, and inf/inf is nan. Did you subtract the row max before exp?":
        "上溢：巨大分数的 exp 是 inf，而 inf/inf 是 nan。做 exp 之前减去每行的最大值了吗？",
    "each row needs its own max, np.max(x, axis=-1, keepdims=True): with the max of the whole array, a row far "
    "below it underflows to 0/0":
        "每一行都需要自己的最大值 np.max(x, axis=-1, keepdims=True)：如果用整个数组的最大值，"
        "比它小很多的那一行会下溢成 0/0",
    "rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis (axis=-1)":
        "各行之和不为 1：Softmax 的轴选错了？应沿最后一个轴归一化（axis=-1）",
    "the whole array sums to 1 instead of each row: sum with axis=-1, keepdims=True":
        "变成了整个数组之和为 1，而不是每一行：求和时用 axis=-1, keepdims=True",
    "rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis (axis=-1, keepdims=True)":
        "各行之和不为 1：Softmax 的轴选错了？应沿最后一个轴归一化（axis=-1, keepdims=True）",
    "rows do not sum to 1: softmax over the wrong axis? Each query's weights over the keys (axis=-1) sum to 1":
        "各行之和不为 1：Softmax 的轴选错了？每个查询对所有键的权重（axis=-1）之和应为 1",
    "scores not divided by √d_k: scores = q kᵀ / √d_k, with d_k = q.shape[-1]":
        "分数没有除以 √d_k：scores = q kᵀ / √d_k，其中 d_k = q.shape[-1]",
    "divided by d_k instead of √d_k": "除以的是 d_k，而不是 √d_k",
    "masked keys got weight: fill the blocked scores with −∞ (np.where(mask, scores, -np.inf)), not 0":
        "被掩码的键分到了权重：应把被屏蔽的分数填成 −∞（np.where(mask, scores, -np.inf)），而不是 0",
    "mask inverted: True = may attend, so keep the scores where mask is True":
        "掩码反了：True = 可以关注，所以应保留 mask 为 True 处的分数",
    "the mask is top-left aligned: query i sits at position S − T + i, so it may attend to keys j <= S − T + i "
    "(np.tril(..., k=n_k - n_q))":
        "掩码是左上角对齐的：查询 i 位于位置 S − T + i，所以它可以关注 j <= S − T + i 的键（np.tril(..., k=n_k - n_q)）",
    "the diagonal is blocked: a token may attend to itself (j <= S − T + i, not <)":
        "对角线被屏蔽了：Token 可以关注它自己（应为 j <= S − T + i，而不是 <）",
    "True and False swapped: here True = may attend (PyTorch's convention), so the past and the token itself are True":
        "True 和 False 弄反了：这里 True = 可以关注（PyTorch 的约定），所以过去的位置和 Token 自身都是 True",
    "not transposed: split into (B, H, T, d_k): reshape to (B, T, H, d_k), then swap axes 1 and 2":
        "没有转置：拆成 (B, H, T, d_k) 时，先 reshape 成 (B, T, H, d_k)，再交换第 1 和第 2 个轴",
    "features interleaved: head h owns features h·d_k … (h+1)·d_k − 1, so reshape the last axis as (H, d_k), "
    "not (d_k, H)":
        "特征交错了：头 h 拥有的是第 h·d_k … (h+1)·d_k − 1 个特征，所以最后一个轴应 reshape 成 (H, d_k)，而不是 (d_k, H)",
    "heads mixed: reshape without transpose? Reshape to (B, T, H, d_k) first, then swap axes 1 and 2":
        "头混在一起了：只 reshape 没有转置？先 reshape 成 (B, T, H, d_k)，再交换第 1 和第 2 个轴",
    "heads mixed: reshape without transpose? Swap axes 1 and 2 back to (B, T, H, d_k), then reshape":
        "头混在一起了：只 reshape 没有转置？先交换第 1 和第 2 个轴回到 (B, T, H, d_k)，再 reshape",
    "features interleaved: head h's d_k features must stay together (transpose to (B, T, H, d_k), not "
    "(B, T, d_k, H))":
        "特征交错了：头 h 的 d_k 个特征必须挨在一起（转置成 (B, T, H, d_k)，而不是 (B, T, d_k, H)）",
    "the new token was left out: append k_new and v_new to the cache first, then attend over all S + 1 keys "
    "(a token attends to itself)":
        "漏掉了新 Token：先把 k_new 和 v_new 追加到缓存里，再对全部 S + 1 个键做注意力（Token 会关注它自己）",
    "the new key and value go at the end of the cache, after the older tokens": "新的键和值应放在缓存末尾，排在旧 Token 之后",
    "the cache was ignored: the new query attends to every cached key as well as its own":
        "忽略了缓存：新的查询既要关注自己的键，也要关注缓存里的每一个键",
    "pairs mixed: that is the rotate-half (GPT-NeoX/Llama) layout; here pair i is the consecutive features "
    "(x_2i, x_2i+1), as in DeepSeek's reference":
        "配对方式错了：那是 rotate-half（GPT-NeoX/Llama）的布局；这里第 i 对是相邻的两个特征 (x_2i, x_2i+1)，"
        "与 DeepSeek 的参考实现一致",
    "rotated the wrong way: y_2i = x_2i cos − x_2i+1 sin, y_2i+1 = x_2i sin + x_2i+1 cos":
        "旋转方向反了：y_2i = x_2i cos − x_2i+1 sin，y_2i+1 = x_2i sin + x_2i+1 cos",
    "frequencies: pair i turns at θ_i = 10000^(−2i/d), for i = 0 … d/2 − 1":
        "频率不对：第 i 对的转速是 θ_i = 10000^(−2i/d)，i = 0 … d/2 − 1",
    "use the positions you are given (they need not start at 0): the angle of token t is positions[t]·θ_i":
        "要用传入的位置（不一定从 0 开始）：Token t 的角度是 positions[t]·θ_i",
    "every head has its own W_UK: use w_uk[h] for head h (q_nope @ w_uk broadcasts over the heads)":
        "每个头都有自己的 W_UK：头 h 要用 w_uk[h]（q_nope @ w_uk 会在头维度上广播）",
    "the RoPE part is missing: add q^R·k^R (one k^R per token, shared by all heads)":
        "漏了 RoPE 部分：要加上 q^R·k^R（每个 Token 一个 k^R，所有头共享）",
    "return the raw scores: the softmax scale 1/√(d_h + d_r) is applied later":
        "返回未缩放的原始分数：Softmax 的缩放系数 1/√(d_h + d_r) 之后才乘",
    "m must be the larger of the two maxima, np.maximum(m_a, m_b), not the last block's":
        "m 必须是两个最大值中较大的那个 np.maximum(m_a, m_b)，而不是最后一块的",
    "sums not rescaled: each state was summed under its own max; multiply l and acc by e^(m_a − m) and "
    "e^(m_b − m), with m = max(m_a, m_b)":
        "和没有重新缩放：每个状态都是在各自的最大值下求和的；要把 l 和 acc 分别乘以 e^(m_a − m) 和 e^(m_b − m)，"
        "其中 m = max(m_a, m_b)",
    "acc not rescaled: acc_a and acc_b need the same factors e^(m_a − m), e^(m_b − m) as l_a and l_b":
        "acc 没有重新缩放：acc_a 和 acc_b 需要乘上与 l_a、l_b 相同的系数 e^(m_a − m)、e^(m_b − m)",
    "rescaled the wrong way: the factors are e^(m_a − m) <= 1, not e^(m − m_a)":
        "缩放方向反了：系数是 e^(m_a − m) <= 1，而不是 e^(m − m_a)",
    "overflow: compute e^(m_a − m) as one exponent, never e^(m_a) / e^(m)":
        "上溢：把 e^(m_a − m) 作为一个指数来算，绝不要算成 e^(m_a) / e^(m)",
    "each query q_i picks its positive among all keys: log-sum-exp over j, along each row of q kᵀ (axis=-1)":
        "每个查询 q_i 是在所有键中挑出它的正样本：log-sum-exp 对 j 求，即沿 q kᵀ 的每一行（axis=-1）",
    "the temperature is ignored: divide the logits q_i·k_j by τ": "忽略了温度：要把 logits q_i·k_j 除以 τ",
    "multiplied by τ: the logits are q_i·k_j / τ": "乘了 τ：logits 应是 q_i·k_j / τ",
    "sum instead of mean over the N pairs": "对 N 对求了和，而不是求平均",
    "sign: the loss is −log softmax(logits)_ii = logsumexp_j(logits_ij) − logits_ii, which is >= 0":
        "符号错了：损失是 −log softmax(logits)_ii = logsumexp_j(logits_ij) − logits_ii，它 >= 0",
    "overflow: exp(q·k / τ) is inf for a small τ; use log-sum-exp with the row max subtracted":
        "上溢：τ 很小时 exp(q·k / τ) 是 inf；要用减去每行最大值的 log-sum-exp",
}

EXERCISES_ZH = Catalog({**_REPORT, **_TITLES, **_LABELS, **_HINTS})
