"""The Chinese of part 2's exercise checkers (notebooks 09-19: caches, RoPE, MLA, sparse, flash, serving,
applications, gradients, training), grouped by exercise.

Each exercise's title, case labels and hints; ``zh.py`` holds the report's frame and the texts that
exercises of both parts share, and builds the catalog. Message data, so it may grow past a module's usual size.
"""

from __future__ import annotations

__all__ = ["PART2_ZH"]

PART2_ZH = {
    # shared by several of these exercises
    "batch and head dims (2, 3), T = 4": "带批和头维度 (2, 3)，T = 4",
    "the backward passes of softmax and attention": "Softmax 与注意力的反向传播",
    # kv_decode_step (notebook 09)
    "one decoding step with a KV cache": "用键值缓存解码一步",
    "(B, H) = (1, 2), S = 3 cached tokens, d_k = d_v = 4": "(B, H) = (1, 2)，已缓存 S = 3 个 Token，d_k = d_v = 4",
    "the first token: an empty cache, S = 0": "第一个 Token：缓存为空，S = 0",
    "large scores (entries about 30)": "较大的分数（元素约为 30）",
    "the new token was left out: append k_new and v_new to the cache first, then attend over all S + 1 keys "
    "(a token attends to itself)":
        "漏掉了新 Token：先把 k_new 和 v_new 追加到缓存里，再对全部 S + 1 个键做注意力（Token 会关注它自己）",
    "the cache was ignored: the new query attends to every cached key as well as its own":
        "忽略了缓存：新的查询既要关注自己的键，也要关注缓存里的每一个键",
    "return the caches grown by the new token (S + 1 tokens), not the ones you were given":
        "返回增加了新 Token 的缓存（S + 1 个 Token），而不是传进来的那个",
    "scores not divided by √d_k: the step is the same scaled dot-product attention as before":
        "分数没有除以 √d_k：这一步与之前一样是缩放点积注意力",
    "softmax over the wrong axis: the new query's weights run over the S + 1 keys (the last axis of the scores) and "
    "sum to 1":
        "Softmax 的轴选错了：新查询的权重遍历 S + 1 个键（分数的最后一个轴），并且和为 1",
    "the cache grows along the sequence axis (the second-to-last, of size S), and only the last two axes of k are "
    "transposed for the scores":
        "缓存沿序列轴（倒数第二个轴，大小为 S）增长，计算分数时只转置 k 的最后两个轴",
    "the new key and value go at the end of the cache, after the older tokens (the cache is in position order)":
        "新的键和值应放在缓存末尾，排在旧 Token 之后（缓存按位置顺序存放）",
    # rope (notebook 10)
    "the RoPE rotation": "RoPE 旋转",
    "one pair at position 1": "位置 1 上的一对特征",
    "(T, d) = (4, 8), positions 0..3": "(T, d) = (4, 8)，位置 0..3",
    "batch and head dims (2, 3, 5, 16), positions 7..11": "带批和头维度 (2, 3, 5, 16)，位置 7..11",
    "float32 (3, 6), positions 0..2": "float32 (3, 6)，位置 0..2",
    "one token at position 100, d = 4": "位置 100 上的一个 Token，d = 4",
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
    "batch and head dims (2, 2, 5, 4), positions [5003, 7, 12000, 0, 4999]":
        "带批和头维度 (2, 2, 5, 4)，位置 [5003, 7, 12000, 0, 4999]",
    "unsorted, non-consecutive positions [5003, 7, 12000, 0, 4999], (5, 8)": "未排序、不连续的位置 [5003, 7, 12000, 0, 4999]，(5, 8)",
    "positions are not wrapped around: the angle of token t is positions[t]·θ_i for any position, 4096 and beyond "
    "too":
        "位置不会回绕：Token t 的角度对任何位置都是 positions[t]·θ_i，4096 及以上也一样",
    "the positions lost precision: float16 holds whole numbers exactly only up to 2048, so 5003 becomes 5004; keep "
    "positions as integers and build the angles in float64":
        "位置丢失了精度：float16 只能精确表示不超过 2048 的整数，所以 5003 变成了 5004；位置要保持为整数，并用 float64 构造角度",
    "use each token's own position: positions need not be consecutive or sorted, so do not reorder them":
        "使用每个 Token 自己的位置：位置不一定连续或有序，所以不要给它们重新排序",
    "use each token's own position: positions need not be consecutive or sorted, so positions[0] + t is not the "
    "position of token t":
        "使用每个 Token 自己的位置：位置不一定连续或有序，所以 positions[0] + t 并不是 Token t 的位置",
    # mla_absorbed_scores (notebook 11)
    "the absorbed MLA score": "吸收权重后的 MLA 分数",
    "one new token (decoding): (2, 3, 1, 7)": "一个新 Token（解码）：(2, 3, 1, 7)",
    "one head, d_c = 8 > d_h = 3": "只有一个头，d_c = 8 > d_h = 3",
    "every head has its own W_UK: use w_uk[h] for head h (q_nope @ w_uk broadcasts over the heads)":
        "每个头都有自己的 W_UK：头 h 要用 w_uk[h]（q_nope @ w_uk 会在头维度上广播）",
    "the RoPE part is missing: add q^R·k^R (one k^R per token, shared by all heads)":
        "漏了 RoPE 部分：要加上 q^R·k^R（每个 Token 一个 k^R，所有头共享）",
    "return the raw scores: the softmax scale 1/√(d_h + d_r) is applied later":
        "返回未缩放的原始分数：Softmax 的缩放系数 1/√(d_h + d_r) 之后才乘",
    "as many sequences as heads: (B, H) = (2, 2), T = 3, S = 4": "序列数与头数相同：(B, H) = (2, 2)，T = 3，S = 4",
    "c_kv and k_pe have no head axis: add one with [:, None] (B, 1, S, ·), so that they line up with the batch axis "
    "of the (B, H, T, ·) queries and are shared by every head":
        "c_kv 和 k_pe 没有头的轴：用 [:, None] 加一个（(B, 1, S, ·)），让它们与 (B, H, T, ·) 查询的批轴对齐，并由所有头共享",
    "c_kv and k_pe have no head axis: add one with [:, None] (B, 1, S, ·), so that they line up with the batch axis "
    "of the (B, H, T, ·) queries and are shared by every head; and transpose only their last two axes (x.T reverses "
    "every axis)":
        "c_kv 和 k_pe 没有头的轴：用 [:, None] 加一个（(B, 1, S, ·)），让它们与 (B, H, T, ·) 查询的批轴对齐，并由所有头共享；"
        "并且只转置它们的最后两个轴（x.T 会反转所有轴）",
    # index_scores (notebook 12)
    "T = 3 new tokens after 4 cached ones: (1, 3, 3, 7), d_I = 8": "已缓存 4 个之后的 T = 3 个新 Token：(1, 3, 3, 7)，d_I = 8",
    "one head, one token: (1, 1, 1, 1)": "一个头，一个 Token：(1, 1, 1, 1)",
    "one new token against S = 6 keys (decoding): (2, 2, 1, 6)": "一个新 Token 对 S = 6 个键（解码）：(2, 2, 1, 6)",
    "the lightning indexer's scores": "闪电索引器的分数",
    "ReLU is per head, inside the sum: Σ_h w_h ReLU(q_h·k), not ReLU(Σ_h w_h q_h·k)":
        "ReLU 作用于每个头、位于求和之内：Σ_h w_h ReLU(q_h·k)，而不是 ReLU(Σ_h w_h q_h·k)",
    "each head is weighted by its own w[b, t, h], per query: not a plain mean over the heads":
        "每个头按它自己的 w[b, t, h] 加权，逐个查询：而不是对各个头简单取平均",
    "fill the future with −∞, not 0: a 0 score beats every negative one, so top-k would pick a future key":
        "未来的位置要填 −∞，而不是 0：分数 0 比任何负分数都大，top-k 就会选中一个未来的键",
    "fill the future with −∞, not a large negative number: −1e9 is a score top-k can still pick when a query sees "
    "fewer than k keys":
        "未来的位置要填 −∞，而不是一个很大的负数：当一个查询看到的键少于 k 个时，−1e9 仍是 top-k 可能选中的分数",
    "no ReLU: each head's dot product goes through ReLU before it is weighted (negative ones count 0)":
        "漏了 ReLU：每个头的点积在加权之前要先经过 ReLU（负的记为 0）",
    "the dot products are scaled by 1/√d_I (the width of one head) before the ReLU":
        "点积在 ReLU 之前要乘以 1/√d_I（一个头的宽度）",
    "the future is not masked: key s is visible to query t only up to t's own position (-inf beyond)":
        "没有屏蔽未来：键 s 只在不超过查询 t 自身位置时才对 t 可见（超出部分为 -inf）",
    "the mask is top-left aligned: the T queries are the last T of the S tokens, query i sits at position S − T + i":
        "掩码是左上角对齐的：这 T 个查询是 S 个 Token 中的最后 T 个，查询 i 位于位置 S − T + i",
    "the scale is 1/√d_I, the head width, not one over the square root of the number of heads (the 1/√H_I is already "
    "inside w)":
        "缩放系数是 1/√d_I，即头宽，而不是头数平方根的倒数（1/√H_I 已经包含在 w 里了）",
    "w is (B, T, H_I) but the per-head dot products are (B, H_I, T, S): move w's head axis to where q's is before "
    "weighting, and give it a trailing axis for S":
        "w 是 (B, T, H_I)，而逐头的点积是 (B, H_I, T, S)：加权之前要把 w 的头轴移到与 q 相同的位置，并为 S 添加一个末尾轴",
    "fill the future with −∞, not the most negative finite number: np.finfo(dtype).min is still a score top-k can "
    "pick when a query sees fewer than k keys":
        "未来的位置要填 −∞，而不是最负的有限数：当一个查询看到的键少于 k 个时，np.finfo(dtype).min 仍是 top-k 可能选中的分数",
    "off by one at the causal edge: query i sits at position S − T + i and sees the keys up to its own position, "
    "that one included, and none after it":
        "因果边界上差了一位：查询 i 位于位置 S − T + i，看得到直到它自己位置（含）的键，之后的一个也看不到",
    "the scores came out √H_I too small: the scale is 1/√d_I, the width of one head (not of all heads together), and "
    "the 1/√H_I is already inside w (do not divide by it again)":
        "分数小了 √H_I 倍：缩放系数是 1/√d_I，即一个头的宽度（而不是所有头加起来的宽度），而 1/√H_I 已经包含在 w 里了（不要再除一次）",
    "w is (B, T, H_I): a reshape keeps the memory order and mixes tokens with heads; swap its last two axes (a "
    "transpose) to put the heads where q's are":
        "w 是 (B, T, H_I)：reshape 保持内存顺序，会把 Token 和头混在一起；要交换它的最后两个轴（转置），把头放到与 q 相同的位置",
    # online_softmax_merge (notebook 13)
    "the online-softmax merge": "在线 Softmax 的合并",
    "one row, blocks of 3 and 4 keys": "一行，两块分别有 3 个和 4 个键",
    "3 rows, blocks of 4 and 5 keys, d_v = 2": "3 行，两块分别有 4 个和 5 个键，d_v = 2",
    "huge scores: block maxima about 1000 and 990": "巨大的分数：两块的最大值约为 1000 和 990",
    "the second block is empty (fully masked: m = −∞, l = 0, acc = 0)": "第二块为空（全部被掩码：m = −∞，l = 0，acc = 0）",
    "both blocks empty (a row that sees no key yet)": "两块都为空（这一行还看不到任何键）",
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
    "batch dims (2, 2), T = 3: row 0 empty in both blocks, row 2 empty in the first":
        "带批维度 (2, 2)，T = 3：第 0 行在两块中都为空，第 2 行在第一块中为空",
    "rows 1 and 3 empty in both blocks, the other rows not": "第 1、3 行在两块中都为空，其他行不为空",
    "the first block is empty, the second full": "第一块为空，第二块是满的",
    "an empty state must be neutral: when both maxima are −∞, e^(m_a − m) = e^(−∞ + ∞) = nan; in such a row shift "
    "by a finite number instead of by m, so that e^(−∞) = 0 keeps l = 0 and acc = 0":
        "空状态必须是中性的：两个最大值都是 −∞ 时，e^(m_a − m) = e^(−∞ + ∞) = nan；在这样的行中，平移一个有限的数而不是 m，"
        "这样 e^(−∞) = 0 就能保持 l = 0、acc = 0",
    "guard each row on its own: a row empty in both blocks (m = −∞) needs a finite shift even when the other rows are "
    "not empty; a test on the whole array (if ...) sees only one case":
        "每一行要单独处理：在两块中都为空的行（m = −∞）需要一个有限的平移量，即使其他行不为空；对整个数组做一次判断（if ...）只能照顾到一种情况",
    # merge_partials (notebook 14)
    "merging two splits' partial results": "合并两个分片的部分结果",
    "4 queries, splits of 6 and 2 keys, d_v = 3": "4 个查询，两个分片分别有 6 个和 2 个键，d_v = 3",
    "huge scores: lse about 1000 and 990": "巨大的分数：lse 约为 1000 和 990",
    "one query, splits of 3 and 5 keys": "一个查询，两个分片分别有 3 个和 5 个键",
    "row 0 saw no key in either split, row 1 only in b, row 2 in both": "第 0 行在两个分片中都没看到键，第 1 行只在 b 中看到，第 2 行在两者中都看到",
    "rows 1 and 2 saw no key in split b (lse −∞, out 0), row 0 did": "第 1、2 行在分片 b 中没看到键（lse −∞，out 0），第 0 行看到了",
    "very negative scores: lse about -1000 and -1010": "非常负的分数：lse 约为 -1000 和 -1010",
    "lse has no d_v axis: give each row's weight one with [..., None] before multiplying out":
        "lse 没有 d_v 轴：与 out 相乘之前，用 [..., None] 给每一行的权重加上这个轴",
    "lse is a logarithm of a mass: the weights are its exponentials, not lse_a / (lse_a + lse_b)":
        "lse 是质量的对数：权重是它的指数，而不是 lse_a / (lse_a + lse_b)",
    "masses add, their logarithms do not: the merged lse is log(e^lse_a + e^lse_b), not lse_a + lse_b":
        "质量可以相加，它们的对数不行：合并后的 lse 是 log(e^lse_a + e^lse_b)，而不是 lse_a + lse_b",
    "overflow or underflow: e^lse of a huge (or very negative) lse is inf (or 0, then 0/0); only differences of lse "
    "may be exponentiated: subtract the larger lse of each row first":
        "上溢或下溢：lse 很大（或非常负）时 e^lse 是 inf（或 0，进而 0/0）；只能对 lse 的差取指数：先减去每行较大的那个 lse",
    "the merged lse is the log of the summed masses, log(e^lse_a + e^lse_b), not the larger lse":
        "合并后的 lse 是质量之和的对数 log(e^lse_a + e^lse_b)，而不是较大的那个 lse",
    "the two splits are not equal partners: weigh each by its share of the softmax mass, e^lse_a and e^lse_b, "
    "normalised":
        "两个分片的地位并不对等：要按各自在 Softmax 质量中所占的份额 e^lse_a 和 e^lse_b（归一化后）给它们加权",
    "weights swapped: out_a's weight is split a's share e^lse_a / (e^lse_a + e^lse_b)":
        "权重弄反了：out_a 的权重是分片 a 的份额 e^lse_a / (e^lse_a + e^lse_b)",
    "a row that saw no key in either split has lse −∞ in both: −∞ − (−∞) is nan. Such a row needs a guard of its "
    "own, row by row (a test of the whole array is not enough): its result is out 0, lse −∞":
        "在两个分片中都没看到键的行，两边的 lse 都是 −∞：−∞ − (−∞) 是 nan。这样的行需要逐行单独处理（对整个数组做一次判断是不够的）：它的结果是 out 0、lse −∞",
    # info_nce (notebook 15)
    "the InfoNCE loss": "InfoNCE 损失",
    "N = 4 pairs, d = 8, τ = 1": "N = 4 对，d = 8，τ = 1",
    "unit vectors, τ = 0.001: logits up to 1000": "单位向量，τ = 0.001：logits 最大可达 1000",
    "one pair (N = 1)": "只有一对（N = 1）",
    "the temperature is ignored: divide the logits q_i·k_j by τ": "忽略了温度：要把 logits q_i·k_j 除以 τ",
    "multiplied by τ: the logits are q_i·k_j / τ": "乘了 τ：logits 应是 q_i·k_j / τ",
    "sum instead of mean over the N pairs": "对 N 对求了和，而不是求平均",
    "sign: the loss is −log softmax(logits)_ii = logsumexp_j(logits_ij) − logits_ii, which is >= 0":
        "符号错了：损失是 −log softmax(logits)_ii = logsumexp_j(logits_ij) − logits_ii，它 >= 0",
    "float32 in, float32 out: a NumPy float64 (np.sqrt of a Python int, np.zeros without dtype=, np.cos of float64 "
    "angles) promotes the result; Python numbers (d_k ** 0.5) do not, and .astype(x.dtype) casts back. A 0-d result "
    "too: float(...), .item() and math functions give a Python float (float64); return the NumPy result itself":
        "输入 float32，输出也应是 float32：一个 NumPy float64（对 Python 整数求 np.sqrt、不带 dtype= 的 np.zeros、对 float64 角度求 "
        "np.cos）会把结果提升为 float64；Python 数（d_k ** 0.5）不会，而 .astype(x.dtype) 可以转换回来。0 维的结果也一样："
        "float(...)、.item() 和 math 函数给出的是 Python float（float64）；请直接返回 NumPy 的结果",
    "each query q_i picks its positive among all keys: the log-sum-exp runs over j, along each row of q kᵀ (over "
    "the keys, not over the queries)":
        "每个查询 q_i 是在所有键中挑出它的正样本：log-sum-exp 对 j 求，沿 q kᵀ 的每一行（对键求，而不是对查询求）",
    "overflow: exp(q·k / τ) is inf for a small τ; subtract each row's max inside the log-sum-exp":
        "上溢：τ 很小时 exp(q·k / τ) 是 inf；要在 log-sum-exp 里减去每行的最大值",
    # softmax_backward (notebook 18)
    "a saturated row (one weight close to 1)": "饱和的一行（有一个权重接近 1）",
    "a single entry per row (y = 1: dx = 0)": "每行只有一个元素（y = 1：dx = 0）",
    "a square (4, 4) matrix": "一个 (4, 4) 方阵",
    "large upstream gradients (about 1000)": "很大的上游梯度（约 1000）",
    "masked keys (y = 0 there): their gradient is 0": "被掩码的键（那里 y = 0）：它们的梯度为 0",
    "one row of 3": "一行 3 个元素",
    "the correction ⟨g, y⟩ = Σ_j g_j y_j weighs each upstream gradient by its softmax weight; Σ_j g_j leaves out the "
    "weights":
        "修正项 ⟨g, y⟩ = Σ_j g_j y_j 用 Softmax 权重给每个上游梯度加权；Σ_j g_j 漏掉了权重",
    "y_i (1 − y_i) is only the Jacobian's diagonal: the off-diagonal entries −y_i y_j couple every entry of a row, "
    "and they add up to the correction − y ⟨g, y⟩":
        "y_i (1 − y_i) 只是雅可比矩阵的对角线：非对角元素 −y_i y_j 把一行的每个元素耦合起来，它们加起来就是修正项 − y ⟨g, y⟩",
    "⟨g, y⟩ is one number per row: sum over the last axis only (each row is its own softmax)":
        "⟨g, y⟩ 是每行一个数：只沿最后一个轴求和（每一行是它自己的 Softmax）",
    "⟨g, y⟩ is one number per row: sum over the last axis, not the first": "⟨g, y⟩ 是每行一个数：沿最后一个轴求和，而不是第一个",
    "the row correction is missing: y ⊙ g alone is only the diagonal part diag(y) g of the softmax Jacobian; its "
    "off-diagonal part − y yᵀ g couples the entries of a row (one inner product per row)":
        "漏了行修正项：只有 y ⊙ g 只是 Softmax 雅可比矩阵的对角部分 diag(y) g；它的非对角部分 − y yᵀ g 把一行的各元素耦合起来（每行一次内积）",
    "the sign of the correction is flipped: the row's weighted average ⟨g, y⟩ is taken away from each g_i, not g_i "
    "from it":
        "修正项的符号反了：是从每个 g_i 中减去该行的加权平均 ⟨g, y⟩，而不是反过来",
    "the whole bracket is multiplied by y: every entry of dx carries its own weight y_i, the correction included (a "
    "masked entry, y = 0, gets gradient 0)":
        "整个括号都要乘以 y：dx 的每个元素都带着它自己的权重 y_i，修正项也一样（被掩码的元素 y = 0，梯度为 0）",
    # attention_backward (notebook 18)
    "a (B, 1, 1, S) padding mask over (B, H, T, S) = (2, 3, 4, 6): lengths 6 and 2":
        "作用于 (B, H, T, S) = (2, 3, 4, 6) 上的 (B, 1, 1, S) 填充掩码：长度为 6 和 2",
    "a fully masked row (query 1 sees no key): it contributes nothing": "整行被掩码（查询 1 看不到任何键）：它不贡献任何东西",
    "d_k = 16 (the scale 1/4 matters)": "d_k = 16（缩放系数 1/4 起作用）",
    "masked keys got gradient: a blocked score must be −∞ (weight 0); 0 is an ordinary score":
        "被掩码的键得到了梯度：被屏蔽的分数必须是 −∞（权重 0）；0 是一个普通的分数",
    "masked keys must get no gradient: P = 0 where the mask is False (rebuild P with the mask, as the forward pass "
    "did), so dS = 0 there and those keys' rows of dK and dV stay 0":
        "被掩码的键不能得到梯度：mask 为 False 处 P = 0（像前向那样带着掩码重建 P），所以那里 dS = 0，这些键在 dK 和 dV 中的行保持为 0",
    "nan from the fully masked row: its softmax must be weights 0 (not 0/0), so it contributes nothing: its dQ row "
    "is 0 and it adds nothing to dK and dV":
        "整行被掩码的行产生了 nan：它的 Softmax 必须是权重 0（而不是 0/0），这样它不贡献任何东西：它的 dQ 行为 0，对 dK 和 dV 也毫无贡献",
    "the scale is missing in both dQ and dK: S = scale · Q Kᵀ with scale = 1/√d_k":
        "dQ 和 dK 中都漏了缩放系数：S = scale · Q Kᵀ，其中 scale = 1/√d_k",
    "−1e9 is finite: in a fully masked row every score becomes −1e9 and the softmax makes the row uniform, so a row "
    "that should contribute nothing sends gradient to every key; use −∞ and give that row weights 0":
        "−1e9 是有限的：在整行被掩码的行中，每个分数都变成 −1e9，Softmax 会让这一行变得均匀，于是本应不贡献任何东西的行把梯度传给了每个键；"
        "要用 −∞，并让这一行的权重为 0",
    "a padding mask with T = S = 4 (square, not causal): lengths 3 and 4": "T = S = 4 的填充掩码（方形，非因果）：长度为 3 和 4",
    "an allowed key whose score is about 1000 above the others (no mask)": "一个允许关注的键，其分数比其他键高约 1000（无掩码）",
    "dK is missing the scale: the forward multiplied the scores by scale = 1/√d_k, so the chain rule brings that "
    "factor into dK (and dQ) too":
        "dK 漏了缩放系数：前向把分数乘以了 scale = 1/√d_k，所以由链式法则，这个系数也会进入 dK（以及 dQ）",
    "dQ is missing the scale: the forward multiplied the scores by scale = 1/√d_k, so the chain rule brings that "
    "factor into dQ (and dK) too":
        "dQ 漏了缩放系数：前向把分数乘以了 scale = 1/√d_k，所以由链式法则，这个系数也会进入 dQ（以及 dK）",
    "dS needs softmax's row correction: P ⊙ dP alone is only the diagonal of the softmax Jacobian; each row also "
    "takes away its P-weighted average of dP":
        "dS 需要 Softmax 的行修正项：只有 P ⊙ dP 只是 Softmax 雅可比矩阵的对角部分；每一行还要减去 dP 以 P 加权的平均",
    "dV collects, for each value j, dO from every query in proportion to the weight that query gave key j: that is "
    "column j of P, so which matrix is transposed?":
        "对每个值 j，dV 从每个查询收集 dO，比例是该查询给键 j 的权重：那是 P 的第 j 列，所以该转置哪个矩阵？",
    "the row max belongs to the allowed keys only: take it after masking; a blocked score far above the others makes "
    "every allowed exp(s − max) underflow to 0":
        "每行的最大值只能在允许关注的键上取：要在加掩码之后再取；一个远高于其他分数的被屏蔽分数，会让每个允许的 exp(s − max) 都下溢为 0",
    "the sign of dS is flipped: the row correction takes the row's P-weighted average away from dP, not dP from it":
        "dS 的符号反了：行修正项是从 dP 中减去该行以 P 加权的平均，而不是反过来",
    # adam_step (notebook 19)
    "an Adam step": "一步 Adam",
    "a zero gradient entry": "一个为零的梯度元素",
    "float32 first step, batch of matrices (2, 2, 3)": "float32 的第一步，一批矩阵 (2, 2, 3)",
    "other betas (0.5, 0.8), t = 4": "其他的 beta 值 (0.5, 0.8)，t = 4",
    "step t = 10, lr = 0.01": "第 t = 10 步，lr = 0.01",
    "step t = 2, a (3, 4) matrix": "第 t = 2 步，一个 (3, 4) 矩阵",
    "the first step (t = 1) from m = v = 0": "从 m = v = 0 开始的第一步（t = 1）",
    "bias correction: m and v start at 0, so in the first steps they are too small by the factors 1 − β₁ᵗ and "
    "1 − β₂ᵗ; divide by them before the update":
        "偏差修正：m 和 v 从 0 开始，所以在最初几步里它们分别小了 1 − β₁ᵗ 和 1 − β₂ᵗ 倍；更新之前要除以这两个系数",
    "eps goes after the square root, sqrt(v̂) + eps: it guards the division, and inside the root it swamps tiny "
    "gradients":
        "eps 放在开方之后，sqrt(v̂) + eps：它是用来保护除法的，放在根号里会淹没极小的梯度",
    "return the running averages m and v themselves (the next step decays them again); the bias-corrected m̂ and v̂ "
    "are only for this step's update":
        "要返回运行平均 m 和 v 本身（下一步会再次衰减它们）；偏差修正后的 m̂ 和 v̂ 只用于这一步的更新",
    "t is the number of this step, counted from 1 (the first call has t = 1): the correction uses β^t":
        "t 是这一步的序号，从 1 开始计数（第一次调用时 t = 1）：修正系数用的是 β^t",
    "the new gradient gets the small weight 1 − β₁ and the old average the large weight β₁":
        "新的梯度得到较小的权重 1 − β₁，旧的平均得到较大的权重 β₁",
    "v averages the squared gradient g², not |g| or g": "v 平均的是梯度的平方 g²，而不是 |g| 或 g",
    "β₁ belongs to the first moment m (the gradient's average), β₂ to the second moment v (its square's)":
        "β₁ 属于一阶矩 m（梯度的平均），β₂ 属于二阶矩 v（梯度平方的平均）",
    "a late step, t = 1000 (1 − β₁ᵗ is almost 1; 1 − β₂ᵗ is still 0.63)": "很靠后的一步，t = 1000（1 − β₁ᵗ 几乎为 1；1 − β₂ᵗ 仍只有 0.63）",
    "tiny gradients (about 1e-9), eps = 1e-6: where eps goes matters": "极小的梯度（约 1e-9），eps = 1e-6：eps 放在哪里很重要",
    "eps is an argument: use the value passed in, not a constant of your own": "eps 是一个参数：要用传进来的值，而不是你自己的常数",
    "step against the gradient: the update descends, so it is taken away from p (the update itself has the sign of "
    "m̂)":
        "沿梯度的反方向走：更新是下降的，所以要从 p 中减去它（更新量本身的符号与 m̂ 相同）",
}
