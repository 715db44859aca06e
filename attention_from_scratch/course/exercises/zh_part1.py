"""The Chinese of part 1's exercise checkers (notebooks 04-08: softmax, attention, masks, heads), grouped by exercise.

Each exercise's title, case labels and hints; ``zh.py`` holds the report's frame and the texts that
exercises of both parts share, and builds the catalog. Message data, so it may grow past a module's usual size.
"""

from __future__ import annotations

__all__ = ["PART1_ZH"]

PART1_ZH = {
    # shared by several of these exercises
    "split and merge heads": "拆分与合并注意力头",
    "each row needs its own max: with the max of the whole array, a row far below it underflows to 0/0 (or to "
    "weights 0)":
        "每一行都需要自己的最大值：如果用整个数组的最大值，比它小很多的那一行会下溢成 0/0（或权重 0）",
    # softmax (notebook 04)
    "a stable softmax": "数值稳定的 Softmax",
    "one row [1, 2, 3]": "一行 [1, 2, 3]",
    "huge scores [1000, 999, 0]": "巨大的分数 [1000, 999, 0]",
    "rows of very different sizes": "各行数值大小相差悬殊",
    "−∞ entries (masked keys)": "含 −∞ 的元素（被掩码的键）",
    "a single score": "只有一个分数",
    "rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis (axis=-1)":
        "各行之和不为 1：Softmax 的轴选错了？应沿最后一个轴归一化（axis=-1）",
    "rows do not sum to 1: softmax over the wrong axis? Normalise over the last axis (axis=-1, keepdims=True)":
        "各行之和不为 1：Softmax 的轴选错了？应沿最后一个轴归一化（axis=-1, keepdims=True）",
    "float32 huge scores, batch dims (2, 2, 3)": "float32 的巨大分数，批维度 (2, 2, 3)",
    "the whole array sums to 1 instead of each row: each row is its own distribution, summed over its own entries "
    "only":
        "变成了整个数组之和为 1，而不是每一行：每一行是它自己的分布，只对它自己的元素求和",
    # attention (notebook 06)
    "scaled dot-product attention": "缩放点积注意力",
    "a fully masked row (query 1 sees no key)": "整行被掩码（查询 1 看不到任何键）",
    "large scores (entries of q and k about 30)": "较大的分数（q 和 k 的元素约为 30）",
    "divided by d_k instead of √d_k": "除以的是 d_k，而不是 √d_k",
    "mask inverted: True = may attend, so keep the scores where mask is True":
        "掩码反了：True = 可以关注，所以应保留 mask 为 True 处的分数",
    "a (B, 1, 1, S) padding mask over (B, H, T, S) = (2, 3, 4, 6) scores: lengths 6 and 2":
        "作用于 (B, H, T, S) = (2, 3, 4, 6) 分数上的 (B, 1, 1, S) 填充掩码：长度为 6 和 2",
    "rows of very different sizes: query 0's scores about 1000 above query 1's": "各行数值大小相差悬殊：查询 0 的分数比查询 1 的高约 1000",
    "a fully masked row came back as nan (exp(−∞ − (−∞)) = nan, or 0/0): a row with nothing to attend to must give "
    "weights 0 and output 0 (this package's convention); shift such a row by 0 instead of its max, and divide only "
    "where the row's sum is positive":
        "整行被掩码的那一行返回了 nan（exp(−∞ − (−∞)) = nan，或 0/0）：没有任何可关注对象的行必须给出权重 0 和输出 0（本包的约定）；"
        "对这样的行平移 0 而不是它的最大值，并且只在该行之和为正的地方做除法",
    "masked keys got weight: a blocked score must become −∞ (e^(−∞) = 0); 0 is an ordinary score":
        "被掩码的键分到了权重：被屏蔽的分数必须变成 −∞（e^(−∞) = 0）；0 是一个普通的分数",
    "masking after the softmax is not the same: a blocked key with a huge score takes nearly all the weight before "
    "it is removed, and renormalising what is left gives 0/0; block the scores (−∞) before the softmax":
        "在 Softmax 之后再加掩码是不一样的：分数巨大的被屏蔽键在被移除之前几乎拿走了全部权重，对剩下的重新归一化会得到 0/0；"
        "应在 Softmax 之前屏蔽分数（−∞）",
    "rows do not sum to 1: softmax over the wrong axis? Each query's weights over the keys (the last axis) sum to 1":
        "各行之和不为 1：Softmax 的轴选错了？每个查询对所有键的权重（最后一个轴）之和应为 1",
    "scores not divided by √d_k: scores = q kᵀ / √d_k, with d_k the last axis of q":
        "分数没有除以 √d_k：scores = q kᵀ / √d_k，其中 d_k 是 q 的最后一个轴",
    "the mask may have batch and head axes, e.g. (B, 1, 1, S) for padding: let it broadcast against the (..., T, S) "
    "scores (an elementwise choice between the score and −∞) instead of indexing with it":
        "掩码可能带有批轴和头轴，例如填充掩码的 (B, 1, 1, S)：让它与 (..., T, S) 的分数广播（在分数和 −∞ 之间逐元素选择），"
        "而不是用它做索引",
    "the mask was not applied: a blocked key (mask False) must get weight 0": "没有应用掩码：被屏蔽的键（mask 为 False）的权重必须为 0",
    "−1e9 is a large finite number, not −∞: in a fully masked row every score becomes −1e9, and softmax makes the row "
    "uniform (weight 1/S on every blocked key) instead of weights 0; block with −∞ and give a row with nothing to "
    "attend to weights 0":
        "−1e9 是一个很大的有限数，不是 −∞：在整行被掩码的行中，每个分数都变成 −1e9，Softmax 会让这一行变得均匀（每个被屏蔽的键权重 "
        "1/S），而不是权重 0；要用 −∞ 屏蔽，并让没有任何可关注对象的行权重为 0",
    # causal_mask (notebook 07)
    "the causal mask, bottom-right aligned": "右下角对齐的因果掩码",
    "one new token against S = 6 keys (decoding)": "一个新 Token 对 S = 6 个键（解码）",
    "T = 3 new tokens against S = 7 keys": "T = 3 个新 Token 对 S = 7 个键",
    "True and False swapped: here True = may attend (PyTorch's convention), so the past and the token itself are True":
        "True 和 False 弄反了：这里 True = 可以关注（PyTorch 的约定），所以过去的位置和 Token 自身都是 True",
    "more queries than keys: T = 5, S = 3 (the first two queries come before every key)":
        "查询比键多：T = 5，S = 3（前两个查询位于所有键之前）",
    "a query before position 0 sees nothing: with T > S the first T − S queries come before every key (query i sits "
    "at position S − T + i, which is negative for them), so their rows are all False":
        "位于位置 0 之前的查询什么都看不到：T > S 时，前 T − S 个查询位于所有键之前（查询 i 位于位置 S − T + i，对它们来说是负数），"
        "所以它们的行全为 False",
    "the diagonal is blocked: a token may attend to itself (key position <= query position, not <)":
        "对角线被屏蔽了：Token 可以关注它自己（键的位置 <= 查询的位置，而不是 <）",
    "the mask is top-left aligned: the new queries are the LAST T of the S positions, so query i sits at position "
    "S − T + i and sees every key up to that position":
        "掩码是左上角对齐的：新查询是 S 个位置中的最后 T 个，所以查询 i 位于位置 S − T + i，能看到直到该位置的每一个键",
    "the offset runs the other way: query i sits at position S − T + i (the new queries come last), not T − S + i":
        "偏移的方向反了：查询 i 位于位置 S − T + i（新查询排在最后），而不是 T − S + i",
    # split_heads (notebook 08)
    "one head: (2, 3, 8), H = 1": "只有一个头：(2, 3, 8)，H = 1",
    "one token: (1, 1, 8), H = 4": "只有一个 Token：(1, 1, 8)，H = 4",
    "features interleaved: head h owns features h·d_k … (h+1)·d_k − 1, so reshape the last axis as (H, d_k), "
    "not (d_k, H)":
        "特征交错了：头 h 拥有的是第 h·d_k … (h+1)·d_k − 1 个特征，所以最后一个轴应 reshape 成 (H, d_k)，而不是 (d_k, H)",
    "d_k = d_model / H must be a whole number for a reshape: divide with //, not /":
        "reshape 需要 d_k = d_model / H 是整数：用 // 做除法，而不是 /",
    "heads mixed: reshape without transpose? A reshape only regroups numbers in memory order, where each token's "
    "features are contiguous: group them by head within the token first, then move the head axis":
        "头混在一起了：只 reshape 没有转置？reshape 只是按内存顺序重新分组，而每个 Token 的特征是连续存放的：先在 Token 内部按头分组，再移动头的轴",
    "not transposed: the heads must come before the tokens, (B, H, T, d_k): after grouping each token's features by "
    "head, the head and token axes still have to trade places":
        "没有转置：头必须排在 Token 之前，即 (B, H, T, d_k)：把每个 Token 的特征按头分组之后，头轴和 Token 轴还得交换位置",
    # merge_heads (notebook 08)
    "features interleaved: head h's d_k features must stay together (transpose to (B, T, H, d_k), not "
    "(B, T, d_k, H))":
        "特征交错了：头 h 的 d_k 个特征必须挨在一起（转置成 (B, T, H, d_k)，而不是 (B, T, d_k, H)）",
    "heads mixed: reshape without transpose? A reshape only regroups numbers in memory order: bring each token's "
    "heads next to each other (tokens before heads) before flattening them":
        "头混在一起了：只 reshape 没有转置？reshape 只是按内存顺序重新分组：展平之前，先把每个 Token 的各个头挨在一起（Token 在前，头在后）",
}
