"""The Chinese of the exercise checkers of "a Transformer that learns": the notebooks in notebooks/next/
(learning before backpropagation, the Transformer block) and notebook 18's layer exercises, grouped by
exercise.

Each exercise's title, case labels and hints; ``zh.py`` holds the report's frame and builds the catalog.
Message data, so it may grow past a module's usual size.
"""

from __future__ import annotations

__all__ = ["LEARNING_ZH"]

LEARNING_ZH = {
    # numerical_gradient (learning before backpropagation)
    "a gradient by finite differences, and the bigram's gradient": "用有限差分求梯度，以及二元模型的梯度",
    "one parameter: the parabola L(θ) of the notebook, at θ = 0, ε = 1e-3": "一个参数：本课的抛物线 L(θ)，在 θ = 0 处，ε = 1e-3",
    "three entries, f(x) = Σ x³, ε = 0.05": "三个元素，f(x) = Σ x³，ε = 0.05",
    "a (2, 3) matrix, f(X) = Σ sin(X) ⊙ A, ε = 1e-5: one partial derivative per entry":
        "一个 (2, 3) 矩阵，f(X) = Σ sin(X) ⊙ A，ε = 1e-5：每个元素各有一个偏导数",
    "entries that interact, f(x) = (Σ x)², ε = 1e-4": "元素之间相互影响，f(x) = (Σ x)²，ε = 1e-4",
    "a large ε = 0.5 (use the ε you are given: the difference's own error is part of the answer)":
        "较大的 ε = 0.5（用传入的 ε：差分本身的误差也是答案的一部分）",
    "a softmax cross-entropy, −log softmax(z)[1], ε = 1e-6": "一个 Softmax 交叉熵，−log softmax(z)[1]，ε = 1e-6",
    "a one-sided difference (f(x + ε) − f(x))/ε is off by about ε f''/2; the central difference "
    "(f(x + ε) − f(x − ε))/(2ε) cancels that term":
        "单侧差分 (f(x + ε) − f(x))/ε 大约偏差 ε f''/2；中心差分 (f(x + ε) − f(x − ε))/(2ε) 把这一项抵消了",
    "x + ε and x − ε are 2ε apart: divide the difference by 2ε": "x + ε 与 x − ε 相距 2ε：差值要除以 2ε",
    "the difference goes from x − ε to x + ε: f(x + ε) − f(x − ε), so that a rising f has a positive slope":
        "差值是从 x − ε 到 x + ε：f(x + ε) − f(x − ε)，这样上升的 f 才有正的斜率",
    "perturb one entry at a time: moving every entry at once measures the slope along (1, 1, …, 1), the sum of all "
    "the partial derivatives, not each one":
        "每次只扰动一个元素：同时移动所有元素，测到的是沿 (1, 1, …, 1) 方向的斜率，即所有偏导数之和，而不是每一个偏导数",
    "for a matrix, x[i] is a whole row: perturb one entry, x[index] with index from np.ndindex(x.shape) "
    "(or work on a flat copy)":
        "对矩阵来说，x[i] 是整整一行：只扰动一个元素，用 np.ndindex(x.shape) 给出的 index 取 x[index]（或者在展平的副本上操作）",
    "use the ε you are given, not a constant of your own": "用传入的 ε，而不是你自己定的常数",
    # bigram_grad
    "V = 3, four pairs, E = 0 (every row uniform: the loss is ln 3)": "V = 3，四个词对，E = 0（每行都是均匀分布：损失为 ln 3）",
    "a token that occurs three times as an input: its rows of dZ add up": "一个作为输入出现三次的 Token：它对应的 dZ 各行要相加",
    "a token that never occurs as an input (token 3): its row of dE is 0": "一个从未作为输入出现的 Token（Token 3）：它在 dE 中的那一行为 0",
    "the rhyme of the notebook: V = 37, N = 54 pairs, E random": "本课的童谣：V = 37，N = 54 个词对，E 随机",
    "float32, V = 5": "float32，V = 5",
    "large logits (about 1000): subtract each row's max before exp": "较大的 logits（约为 1000）：做 exp 之前先减去每行的最大值",
    "one pair": "只有一个词对",
    "a token that occurs several times as an input must add up all its rows of dZ: de[inputs] += dz keeps only one "
    "of the repeated rows (NumPy does not accumulate repeated indices); use np.add.at(de, inputs, dz) or onehotᵀ @ dz":
        "一个多次作为输入出现的 Token 必须把它对应的 dZ 各行全部相加：de[inputs] += dz 对重复的下标只保留其中一行（NumPy 不会累加"
        "重复的下标）；请用 np.add.at(de, inputs, dz) 或 onehotᵀ @ dz",
    "row a of dE collects the pairs whose *input* is a (z_i = E[w_i]); the targets enter only through the one-hot Y":
        "dE 的第 a 行收集的是*输入*为 a 的那些词对（z_i = E[w_i]）；目标只通过 one-hot 矩阵 Y 起作用",
    "the loss is a mean over the N pairs, so the gradient is divided by N too": "损失是 N 个词对上的平均，所以梯度也要除以 N",
    "the loss is the mean over the N pairs, −(1/N) Σ log p_i[y_i], not the sum":
        "损失是 N 个词对上的平均，−(1/N) Σ log p_i[y_i]，而不是总和",
    "the gradient of −log p[y] with respect to the logits is p − onehot(y): the target's entry is negative "
    "(raising its logit lowers the loss)":
        "−log p[y] 对 logits 的梯度是 p − onehot(y)：目标那一项为负（提高它的 logit 会降低损失）",
    "subtract the one-hot targets: dZ = (softmax(Z) − Y)/N; the target's probability is pulled up, the others down":
        "要减去 one-hot 目标：dZ = (softmax(Z) − Y)/N；目标的概率被拉高，其余的被压低",
    "softmax over each row of logits (axis=-1): one distribution over the next token per pair":
        "对每一行 logits 做 Softmax（axis=-1）：每个词对一个关于下一个 Token 的分布",
    "−log p[y] = logsumexp(z) − z[y]: the normaliser log Σ_c exp(z_c) is part of the loss":
        "−log p[y] = logsumexp(z) − z[y]：归一化项 log Σ_c exp(z_c) 是损失的一部分",
    # rms_norm (the Transformer block)
    "RMSNorm and the gradient of cross-entropy": "RMSNorm 与交叉熵的梯度",
    "one vector (1, 2, 3, 4), gain 1, eps = 0.01": "一个向量 (1, 2, 3, 4)，增益为 1，eps = 0.01",
    "(B, T, d) = (2, 3, 8) with a gain, eps = 1e-6": "(B, T, d) = (2, 3, 8)，带增益，eps = 1e-6",
    "float32 (4, 5)": "float32 (4, 5)",
    "an all-zero row: eps keeps it finite (its output is 0)": "全零的一行：eps 使它保持有限（输出为 0）",
    "tiny values (about 1e-4), eps = 1e-6: where eps goes matters": "极小的数值（约为 1e-4），eps = 1e-6：eps 放在哪里很关键",
    "a larger eps = 0.5 (use the eps you are given)": "较大的 eps = 0.5（用传入的 eps）",
    "d = 1": "d = 1",
    "RMSNorm does not subtract the mean (that is LayerNorm): divide x itself by the root of the mean of x²":
        "RMSNorm 不减去均值（那是 LayerNorm）：直接用 x 除以 x² 均值的平方根",
    "np.std and np.var take the mean away first: the root mean square is sqrt(mean(x²)), with no centring":
        "np.std 和 np.var 会先减去均值：均方根是 sqrt(mean(x²))，不做中心化",
    "eps goes inside the square root, sqrt(mean(x²) + eps): outside, it barely guards tiny vectors":
        "eps 要放在平方根里面，sqrt(mean(x²) + eps)：放在外面，它几乎护不住很小的向量",
    "divide by the root mean square, the square root of mean(x²) + eps, not by the mean square itself":
        "要除以均方根，即 mean(x²) + eps 的平方根，而不是除以均方本身",
    "the mean over the d features, not the sum: the sum grows with d, and the result would shrink as d grows":
        "对 d 个特征取平均，而不是求和：总和随 d 增大，结果会随 d 增大而变小",
    "normalise each position's vector on its own: reduce over the last axis (axis=-1, keepdims=True)":
        "每个位置的向量各自归一化：沿最后一个轴归约（axis=-1, keepdims=True）",
    "multiply by the gain g (a learned d-vector; here not all ones) after normalising":
        "归一化之后要乘以增益 g（一个可学习的 d 维向量；这里不全是 1）",
    "the gain scales the normalised vector: normalise x first, then multiply by g":
        "增益缩放的是归一化后的向量：先把 x 归一化，再乘以 g",
    "add eps inside the square root, sqrt(mean(x²) + eps): without it an all-zero row gives 0/0":
        "在平方根里加上 eps，sqrt(mean(x²) + eps)：没有它，全零的一行会得到 0/0",
    "use the eps you are given, not a constant of your own": "用传入的 eps，而不是你自己定的常数",
    "an all-zero row gives 0/0 = nan: eps inside the root, sqrt(mean(x²) + eps), keeps it finite":
        "全零的一行得到 0/0 = nan：把 eps 放进平方根里，sqrt(mean(x²) + eps)，就能保持有限",
    # cross_entropy_grad
    "one position, V = 3": "一个位置，V = 3",
    "(N, V) = (4, 5)": "(N, V) = (4, 5)",
    "(B, T, V) = (2, 3, 4): N = B·T = 6 positions": "(B, T, V) = (2, 3, 4)：N = B·T = 6 个位置",
    "float32 (3, 6)": "float32 (3, 6)",
    "a target the model already gives probability ≈ 1": "模型已经给出概率 ≈ 1 的目标",
    "(B, T, V) = (1, 5, 2), every target the same": "(B, T, V) = (1, 5, 2)，所有目标都相同",
    "the loss is a mean over the N positions, so its gradient is divided by N (all positions of all sequences: "
    "N = B·T for (B, T, V) logits)":
        "损失是 N 个位置上的平均，所以它的梯度要除以 N（所有序列的所有位置：对 (B, T, V) 的 logits 而言 N = B·T）",
    "N counts every position of every sequence, B·T: dividing by the batch size B alone leaves the gradient T "
    "times too large":
        "N 数的是所有序列的所有位置，即 B·T：只除以批大小 B，梯度会大 T 倍",
    "divide by the number of positions N, not by the vocabulary size V: the loss averages over positions":
        "要除以位置数 N，而不是词表大小 V：损失是对位置取平均",
    "the gradient of −log p[y] is p − onehot(y): the target's entry is negative (raising its logit lowers the loss)":
        "−log p[y] 的梯度是 p − onehot(y)：目标那一项为负（提高它的 logit 会降低损失）",
    "subtract the one-hot targets: dZ = (softmax(Z) − Y)/N": "要减去 one-hot 目标：dZ = (softmax(Z) − Y)/N",
    "the softmax is part of the gradient: dZ = (softmax(Z) − Y)/N, not −Y/N alone (that is the gradient of −z[y] "
    "only, without the log-sum-exp)":
        "Softmax 是梯度的一部分：dZ = (softmax(Z) − Y)/N，而不只是 −Y/N（那只是 −z[y] 的梯度，少了 log-sum-exp）",
    "softmax over each position's V logits (axis=-1): one distribution over the next token per position":
        "对每个位置的 V 个 logits 做 Softmax（axis=-1）：每个位置一个关于下一个 Token 的分布",
    "the logits may have leading axes, (B, T, V): build the one-hot targets with np.eye(V)[targets], which works "
    "for any shape of targets (or flatten to (N, V) first and reshape back)":
        "logits 可能带有前置轴，如 (B, T, V)：用 np.eye(V)[targets] 构造 one-hot 目标，它对任意形状的 targets 都适用"
        "（或者先展平成 (N, V)，算完再 reshape 回去）",
    # linear_backward (notebook 18)
    "the backward passes of a matrix product, softmax, attention and a whole layer":
        "矩阵乘积、Softmax、注意力以及整个层的反向传播",
    "the 2 × 2 case of section 2": "第 2 节的 2 × 2 例子",
    "(N, d_in) = (5, 3), d_out = 4": "(N, d_in) = (5, 3)，d_out = 4",
    "(B, T, d_in) = (2, 5, 4), d_out = 3: W is shared by all B·T positions":
        "(B, T, d_in) = (2, 5, 4)，d_out = 3：W 由全部 B·T 个位置共享",
    "float32 (3, 4), d_out = 2": "float32 (3, 4)，d_out = 2",
    "one row, (1, 3) -> (1, 5)": "只有一行，(1, 3) -> (1, 5)",
    "four axes (2, 3, 4, 6), d_out = 2": "四个轴 (2, 3, 4, 6)，d_out = 2",
    "d_out = 1": "d_out = 1",
    "dW has W's shape (d_in, d_out): it is xᵀ dy, not dyᵀ x (that is the gradient of Wᵀ)":
        "dW 与 W 同形，为 (d_in, d_out)：它是 xᵀ dy，而不是 dyᵀ x（那是 Wᵀ 的梯度）",
    "W is shared by every position: dW adds up x_iᵀ dy_i over all of them, not one position's product":
        "W 由每个位置共享：dW 要把所有位置的 x_iᵀ dy_i 加起来，而不是只取一个位置的乘积",
    "dW is a sum over the positions, not a mean: the loss has already decided how they are weighted":
        "dW 是对各位置求和，而不是取平均：各位置如何加权，损失已经决定了",
    "the sum of the products x_iᵀ dy_i is not the product of the sums (Σ x_i)ᵀ (Σ dy_i): flatten the positions into "
    "rows and take x_flatᵀ @ dy_flat":
        "乘积 x_iᵀ dy_i 之和不等于和的乘积 (Σ x_i)ᵀ (Σ dy_i)：把各位置展平成行，再算 x_flatᵀ @ dy_flat",
    "return (dx, dw) in that order": "按 (dx, dw) 的顺序返回",
    "going back through y = x W multiplies by the transpose of W: dx = dy Wᵀ, of x's shape":
        "沿 y = x W 往回走，要乘以 W 的转置：dx = dy Wᵀ，形状与 x 相同",
    "shapes: dx = dy Wᵀ is (…, d_out) @ (d_out, d_in); dW = xᵀ dy needs x and dy flattened to (N, d_in) and "
    "(N, d_out) first (x.T reverses every axis of a 3-D array)":
        "形状：dx = dy Wᵀ 是 (…, d_out) @ (d_out, d_in)；dW = xᵀ dy 需要先把 x 和 dy 展平成 (N, d_in) 和 (N, d_out)"
        "（对三维数组，x.T 会反转所有轴）",
    # mha_backward (notebook 18)
    "(B, T, d_model) = (1, 3, 4), one head, no mask": "(B, T, d_model) = (1, 3, 4)，一个头，无掩码",
    "two heads of d_k = 4, (B, T) = (2, 5), causal": "两个 d_k = 4 的头，(B, T) = (2, 5)，因果",
    "four heads of d_k = 2, (B, T) = (1, 4), no mask": "四个 d_k = 2 的头，(B, T) = (1, 4)，无掩码",
    "float32, two heads, causal": "float32，两个头，因果",
    "one token (T = 1), two heads": "只有一个 Token（T = 1），两个头",
    "three heads of d_k = 2, (B, T) = (3, 4), causal, larger weights": "三个 d_k = 2 的头，(B, T) = (3, 4)，因果，权重更大",
    "x feeds Q, K and V: dx is the sum of the three paths, dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ":
        "x 同时流向 Q、K 和 V：dx 是三条路径之和，dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ",
    "merging heads is a transpose, then a reshape: (B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, H·d_k); a reshape "
    "alone mixes positions and heads (and splitting is the same two steps in reverse)":
        "合并注意力头是先转置、再 reshape：(B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, H·d_k)；只做 reshape 会把位置和头"
        "混在一起（拆分则是这两步倒过来）",
    "going back through Y = A W_O multiplies by W_Oᵀ: dA = dY W_Oᵀ, before splitting it into heads":
        "沿 Y = A W_O 往回走要乘以 W_Oᵀ：dA = dY W_Oᵀ，然后再拆分成各个头",
    "W_O multiplies the merged heads A, not x: dW_O = Aᵀ dY (flattened over the positions)":
        "W_O 乘的是合并后的头 A，而不是 x：dW_O = Aᵀ dY（在各位置上展平）",
    "the backward pass must use the forward pass's mask: with causal=True, P is 0 above the diagonal, and so is dS":
        "反向传播必须使用前向传播的掩码：causal=True 时，P 在对角线以上为 0，dS 也是",
    "the forward pass multiplied the scores by 1/√d_k, so attention's backward brings that factor into dQ and dK":
        "前向传播把分数乘了 1/√d_k，所以注意力的反向传播也会把这个因子带进 dQ 和 dK",
    "each gradient adds up every position of every sequence: do not divide by the batch size (the loss has already "
    "averaged whatever it averages)":
        "每个梯度都要把所有序列的所有位置加起来：不要除以批大小（该取平均的，损失已经取过了）",
}
