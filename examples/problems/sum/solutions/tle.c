/* Time limit exceeded: a busy loop that never ends (volatile: the compiler keeps it). */
int main(void) {
    volatile unsigned long n = 0;
    for (;;)
        n++;
}
